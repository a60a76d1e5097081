/**
 * The message identities of the conversations last seen, so that a request which resends its
 * whole history costs identity work only in its new messages (T4). Agents resend every turn the
 * messages they sent before; a message equal, as a JSON value, to the one at its place in the
 * previous request of the same conversation, with all messages before it equal too, has the same
 * identity, since an identity depends only on its message and the messages before it.
 *
 * @module
 */
import { type CacheStats, WeightedLru } from "../cache/mod.ts";

/** What a conversation's request held, and the identity of each of its messages. */
interface Seen {
  readonly messages: readonly unknown[];
  readonly identities: readonly string[];
  /** `chars[i]`: characters of messages `0..i` (strings and keys) and of their identities. */
  readonly chars: readonly number[];
}

/**
 * Identities of the last request of each conversation, up to `capacityBytes` bytes of held
 * messages (their strings and keys, parsed) and identities, least recently used dropped first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { IdentityMemo } from "./identity_memo.ts";
 * const memo = new IdentityMemo(1 << 20);
 * const computed: number[] = [];
 * const identify = (messages: readonly string[]) => (known: readonly string[]) => {
 *   computed.push(messages.length - known.length);
 *   return [...known, ...messages.slice(known.length).map((m) => `<${m}>`)];
 * };
 * const first = ["hi", "hello"];
 * assert.deepEqual(memo.identities("s1", first, identify(first)), ["<hi>", "<hello>"]);
 * const next = ["hi", "hello", "how are you?"];
 * assert.equal(memo.identities("s1", next, identify(next)).length, 3);
 * assert.deepEqual(computed, [2, 1]); // the second request's first two messages were known
 * ```
 */
export class IdentityMemo {
  readonly #seen: WeightedLru<string, Seen>;

  constructor(readonly capacityBytes: number) {
    const chars = (key: string, seen: Seen) => key.length + (seen.chars.at(-1) ?? 0);
    // The parsed messages and the identities' text: about 2 bytes a character each (measured
    // on Claude Code's requests: JSON text 2.0, its parse 1.8).
    this.#seen = new WeightedLru(capacityBytes, (key, seen) => 4 * chars(key, seen), chars);
  }

  /** What it holds (characters; bytes estimated) and how it was used. */
  stats(): CacheStats {
    return this.#seen.stats();
  }

  /** Forgets the conversations whose key starts with `prefix` (a session's, once it ended). */
  forget(prefix: string): void {
    this.#seen.deleteWhere((key) => key.startsWith(prefix));
  }

  /**
   * The identities of `messages`, a request of conversation `key`. `identify(known)` computes
   * them given the identities `known` of a leading run of messages equal to the ones last seen
   * under `key` (possibly none); it returns all of them, `known` first.
   *
   * A wrong or shared `key` costs only the reuse: nothing is reused unless the messages are
   * equal. The messages are held until the conversation's next request, and must not be changed.
   */
  identities(
    key: string,
    messages: readonly unknown[],
    identify: (known: readonly string[]) => string[],
  ): string[] {
    const seen = this.#seen.get(key);
    let same = 0;
    if (seen) {
      const end = Math.min(seen.messages.length, messages.length);
      while (same < end && jsonEqual(seen.messages[same], messages[same])) same++;
    }
    const identities = identify(seen ? seen.identities.slice(0, same) : []);
    // Each new message weighs its own strings and keys, thinking included, which its identity
    // leaves out: a client cannot make a heavy message weigh little.
    const chars = seen ? seen.chars.slice(0, same) : [];
    for (let i = same; i < messages.length; i++) {
      chars.push((chars.at(-1) ?? 0) + jsonChars(messages[i]) + identities[i].length);
    }
    this.#seen.set(key, { messages, identities, chars });
    return identities;
  }

  /** Characters held: messages' strings and keys, identities, and the conversations' keys. */
  get held(): number {
    return this.#seen.held;
  }
}

/**
 * True when two parsed JSON values are the same: equal primitives, arrays of equal items, objects
 * with the same keys in the same order and equal values. Stricter than identity (key order
 * counts), never looser.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonEqual } from "./identity_memo.ts";
 * assert.ok(jsonEqual({ a: [1, "x"] }, { a: [1, "x"] }));
 * assert.ok(!jsonEqual({ a: 1, b: 2 }, { b: 2, a: 1 }));
 * assert.ok(!jsonEqual([1], { 0: 1 }));
 * ```
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  for (let i = 0; i < keysA.length; i++) {
    const key = keysA[i];
    if (key !== keysB[i]) return false;
    if (!jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) {
      return false;
    }
  }
  return true;
}

/** Characters of a parsed JSON value's strings and keys, and 8 for any other item. */
function jsonChars(value: unknown): number {
  if (typeof value === "string") return value.length;
  if (typeof value !== "object" || value === null) return 8;
  let chars = 8;
  if (Array.isArray(value)) {
    for (const item of value) chars += jsonChars(item);
    return chars;
  }
  for (const key of Object.keys(value)) {
    chars += key.length + jsonChars((value as Record<string, unknown>)[key]);
  }
  return chars;
}
