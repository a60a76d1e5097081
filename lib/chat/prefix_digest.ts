/**
 * Chained digests of a conversation: `digest[0]` covers its start (system prompt and tools),
 * `digest[i + 1]` covers the start and messages `0..i`. Two requests share a prefix of `n`
 * messages exactly when their `digest[n]` agree, so a chain can recognise its own history by
 * one comparison.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** Hex length kept of each SHA-256 digest (128 bits). */
const DIGEST_HEX = 32;

/**
 * Digests of every prefix of a conversation, given the identity string of its start and of
 * each message (see the protocol adapter's `messageIdentity`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { extendDigest, prefixDigests } from "./prefix_digest.ts";
 * const digests = prefixDigests("system+tools", ['{"role":"user"}']);
 * assert.equal(digests.length, 2);
 * assert.equal(extendDigest(digests[0], '{"role":"user"}'), digests[1]);
 * ```
 */
export function prefixDigests(start: string, messages: readonly string[]): string[] {
  const out = new Array<string>(messages.length + 1);
  out[0] = digest("start", start);
  for (let i = 0; i < messages.length; i++) out[i + 1] = digest(out[i], messages[i]);
  return out;
}

/** The digest that extends `previous` by one message identity. */
export function extendDigest(previous: string, message: string): string {
  return digest(previous, message);
}

function digest(previous: string, item: string): string {
  return createHash("sha256").update(previous).update("\n").update(item).digest("hex").slice(
    0,
    DIGEST_HEX,
  );
}
