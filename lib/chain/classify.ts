/**
 * How a request relates to the chain it was routed to.
 *
 * @module
 */

/** What the chain must do for a request. */
export type Classification =
  /** The request repeats the chain's whole history and adds messages from `from` on. */
  | { readonly kind: "append"; readonly from: number }
  /** The chain is empty: render the whole conversation. */
  | { readonly kind: "start" }
  /** The request does not extend the chain: a new chain starts and replaces it. */
  | { readonly kind: "diverge" };

/** The part of a chain header classification reads. */
export interface ChainTip {
  readonly messageCount: number;
  readonly digest: string;
}

/**
 * Classifies a request by its prefix digests (`digests[n]` covers its first `n` messages).
 *
 * @example
 * ```ts
 * classify({ messageCount: 2, digest: "d2" }, ["d0", "d1", "d2", "d3"]); // { kind: "append", from: 2 }
 * ```
 */
export function classify(tip: ChainTip | null, digests: readonly string[]): Classification {
  if (tip === null) return { kind: "start" };
  const messages = digests.length - 1;
  if (tip.messageCount < messages && digests[tip.messageCount] === tip.digest) {
    return { kind: "append", from: tip.messageCount };
  }
  return { kind: "diverge" };
}
