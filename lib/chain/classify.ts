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
 * import assert from "node:assert/strict";
 * import { classify } from "./classify.ts";
 * assert.deepEqual(classify({ messageCount: 2, digest: "d2" }, ["d0", "d1", "d2", "d3"]), {
 *   kind: "append",
 *   from: 2,
 * });
 * assert.deepEqual(classify(null, ["d0", "d1"]), { kind: "start" });
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

/** A turn boundary: the conversation after a turn's reply, and the request before it. */
export interface TurnBoundary {
  /** Messages after the turn, its reply included. */
  readonly messageCount: number;
  /** Prefix digest of those messages. */
  readonly digest: string;
  /** Prefix digest of the turn's request (the messages before its reply). */
  readonly requestDigest: string;
}

/**
 * How far a rewind goes: the live turns kept, and the first message to render after them.
 * `edited` marks a realign: the client kept the request of the first discarded turn but sent a
 * reply other than the one recorded (an edited echo), which is rendered as context.
 */
export interface Rewind {
  readonly keep: number;
  readonly from: number;
  readonly edited: boolean;
}

/**
 * The rewind a request asks for, or `null`: its history ends at an earlier turn boundary of the
 * chain — it continues from the reply of turn `keep - 1` with other messages, or it repeats the
 * request of turn `keep` (a client regenerating that turn), or it repeats that request followed
 * by another reply (`edited`). The latest such boundary wins.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { findRewind } from "./classify.ts";
 * const turns = [
 *   { messageCount: 2, digest: "d2", requestDigest: "d1" },
 *   { messageCount: 4, digest: "d4", requestDigest: "d3" },
 *   { messageCount: 6, digest: "d6", requestDigest: "d5" },
 * ];
 * // The request repeats messages 0..3, then goes on from turn 1's reply with another message.
 * const digests = ["d0", "d1", "d2", "d3", "d4", "x5"];
 * // Keep turns 0 and 1, render messages 4.. after them.
 * assert.deepEqual(findRewind(turns, digests), { keep: 2, from: 4, edited: false });
 * ```
 */
export function findRewind(
  turns: readonly TurnBoundary[],
  digests: readonly string[],
): Rewind | null {
  const messages = digests.length - 1;
  for (let j = turns.length - 1; j >= 0; j--) {
    const turn = turns[j];
    if (turn.messageCount < messages && digests[turn.messageCount] === turn.digest) {
      return { keep: j + 1, from: turn.messageCount, edited: false };
    }
    const request = turn.messageCount - 1;
    if (request <= messages && digests[request] === turn.requestDigest) {
      const from = j === 0 ? 0 : turns[j - 1].messageCount;
      return { keep: j, from, edited: request < messages };
    }
  }
  return null;
}
