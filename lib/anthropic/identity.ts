/**
 * The identity of an Anthropic message: a canonical JSON string of what the message says,
 * without presentation details (`cache_control`, string vs. one text block, key order), so a
 * client echoing history back is recognised even when it moves cache markers around.
 *
 * An assistant message is identified by what clients keep when they echo a reply
 * (docs/DESIGN.md §4.2): its text with whitespace runs collapsed and the edges trimmed, and its
 * tool calls by name and input, in order. Reasoning (`thinking`, `redacted_thinking`) is left
 * out, and so are tool-call ids: a tool result names its call by position (how many messages
 * back, which call), so ids rewritten consistently keep the identity. The chain keeps the
 * tokens as sampled either way.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { type CacheStats, recurringToken, WeightedLru } from "../cache/mod.ts";
import { extendDigest } from "../chat/mod.ts";
import type { OutputBlock } from "../output/mod.ts";
import type { ContentBlock, ContentBlockParam, MessageParam } from "./types.ts";

/** A message as identities read it: a role and its content. */
type AnyMessage = { role: string; content: MessageParam["content"] | ContentBlock[] };

/**
 * Canonical JSON of each message of a conversation, in order. A message's identity depends
 * only on it and the messages before it, so equal prefixes give equal identities: `known` gives
 * those of a leading run of messages already identified (as `IdentityMemo` finds them), and
 * only the rest are built.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageIdentities } from "./identity.ts";
 * const [, reply] = messageIdentities([
 *   { role: "user", content: "hi" },
 *   { role: "assistant", content: [{ type: "text", text: " hello " }] },
 * ]);
 * const plain = messageIdentities([
 *   { role: "user", content: "hi" },
 *   { role: "assistant", content: "hello" },
 * ]);
 * assert.equal(reply, plain[1]);
 * ```
 */
export function messageIdentities(
  messages: readonly AnyMessage[],
  known: readonly string[] = [],
): string[] {
  /** Client tool-use id → [index of the assistant message that made the call, call index]. */
  const calls = new Map<string, [number, number]>();
  return messages.map((message, i) => {
    const identity = i < known.length ? known[i] : messageIdentity(message, (id) => {
      const call = calls.get(id);
      return call ? { back: i - call[0], call: call[1] } : { id };
    });
    if (message.role === "assistant" && typeof message.content !== "string") {
      let k = 0;
      for (const block of message.content as ContentBlockParam[]) {
        if (block.type === "tool_use") calls.set(block.id, [i, k++]);
      }
    }
    return identity;
  });
}

/**
 * Canonical JSON of one message, alone (a tool result names its call by id unless `callRef`
 * resolves it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageIdentity } from "./identity.ts";
 * assert.equal(
 *   messageIdentity({ role: "user", content: "hi" }),
 *   messageIdentity({
 *     role: "user",
 *     content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }],
 *   }),
 * );
 * ```
 */
export function messageIdentity(
  message: AnyMessage,
  callRef: (id: string) => unknown = (id) => ({ id }),
): string {
  if (message.role === "assistant") return replyIdentity(message.content);
  const blocks = typeof message.content === "string"
    ? [{ type: "text", text: message.content }]
    : (message.content as ContentBlockParam[]).map((block) => blockIdentity(block, callRef));
  return JSON.stringify({ role: message.role, content: blocks });
}

/**
 * The identity of a reply built from parsed output, whichever protocol shows it: what its echo
 * will be identified by, over the Messages API or Chat Completions alike.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageIdentity, outputIdentity } from "./identity.ts";
 * assert.equal(
 *   outputIdentity([{ type: "text", text: "hello" }]),
 *   messageIdentity({ role: "assistant", content: "hello" }),
 * );
 * ```
 */
export function outputIdentity(blocks: readonly OutputBlock[]): string {
  return replyIdentity(blocks.flatMap((block): ContentBlockParam[] => {
    if (block.type === "text") return [{ type: "text", text: block.text }];
    if (block.type === "tool_call") {
      return [{ type: "tool_use", id: "", name: block.name, input: block.input }];
    }
    return [];
  }));
}

/** The identity of an assistant message: its normalized text, tool calls and other blocks. */
function replyIdentity(content: AnyMessage["content"]): string {
  const blocks = typeof content === "string"
    ? [{ type: "text" as const, text: content }]
    : content as ContentBlockParam[];
  const text: string[] = [];
  const calls: unknown[] = [];
  const other: unknown[] = [];
  for (const block of blocks) {
    if (block.type === "text") text.push(block.text);
    else if (block.type === "tool_use") {
      calls.push({ name: block.name, input: sortKeys(block.input) });
    } else if (block.type !== "thinking" && block.type !== "redacted_thinking") {
      other.push(blockIdentity(block, (id) => ({ id })));
    }
  }
  return JSON.stringify({ role: "assistant", text: normalizeText(text.join(" ")), calls, other });
}

/** Text as an echo identifies it: whitespace runs as one space, no whitespace at the edges. */
export function normalizeText(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * Identity of a conversation's start: the system text the model sees. Tools are not part of it:
 * a client may offer more tools mid-conversation, and the chain renders them in its delta.
 */
export function startIdentity(system: string): string {
  return stableJson({ system });
}

/** The fields of a block that make up its identity; strings are shared, not copied. */
function blockIdentity(block: ContentBlockParam, callRef: (id: string) => unknown): unknown {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "thinking":
      return { type: "thinking", thinking: block.thinking, signature: block.signature };
    case "redacted_thinking":
      return { type: "redacted_thinking", data: block.data };
    case "tool_use":
      return { type: "tool_use", id: block.id, name: block.name, input: sortKeys(block.input) };
    case "tool_result":
      return {
        type: "tool_result",
        call: callRef(block.tool_use_id),
        is_error: block.is_error ?? false,
        content: block.content === undefined
          ? []
          : typeof block.content === "string"
          ? [{ type: "text", text: block.content }]
          : block.content.map((inner) => blockIdentity(inner as ContentBlockParam, callRef)),
      };
    case "image":
    case "document":
      return sortKeys(
        withoutCacheControl({ ...block, source: sourceIdentity(block.source) }, callRef),
      );
    default:
      return sortKeys(withoutCacheControl(block, callRef));
  }
}

/**
 * A media source as its identity: its base64 data as their SHA-256, so an image's identity is its
 * bytes, while the identity a conversation keeps of it is 64 characters, not megabytes.
 */
function sourceIdentity(source: unknown): unknown {
  if (typeof source !== "object" || source === null) return source;
  const { data, ...rest } = source as Record<string, unknown>;
  if (typeof data !== "string") return source;
  return { ...rest, data_sha256: createHash("sha256").update(data).digest("hex") };
}

/** Any other block minus `cache_control`, nested content blocks included. */
function withoutCacheControl(
  block: Record<string, unknown>,
  callRef: (id: string) => unknown,
): Record<string, unknown> {
  const { cache_control: _, ...rest } = block;
  if (Array.isArray(rest.content)) {
    rest.content = rest.content.map((inner) =>
      typeof inner === "object" && inner !== null
        ? blockIdentity(inner as ContentBlockParam, callRef)
        : inner
    );
  }
  return rest;
}

/** A copy of `value` with every object's keys in sorted order (strings and numbers shared). */
function sortKeys(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(sortKeys);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) out[key] = sortKeys(item);
  }
  return out;
}

/**
 * JSON with object keys sorted, so equal values give equal strings.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stableJson } from "./identity.ts";
 * assert.equal(stableJson({ b: 1, a: [2, { d: 3, c: 4 }] }), '{"a":[2,{"c":4,"d":3}],"b":1}');
 * ```
 */
export function stableJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

/** Bytes of settings JSON {@linkcode settingsDigest} keeps by default: the tools of a few agents. */
const SETTINGS_CACHE_BYTES = 4 * 1024 * 1024;

/** Settings digests by their stable JSON: two bytes a character at most. */
function settingsLru(capacityBytes: number): WeightedLru<string, string> {
  return new WeightedLru<string, string>(
    capacityBytes,
    (json, digest) => 2 * (json.length + digest.length),
    (json, digest) => json.length + digest.length,
  );
}

let settingsCache = settingsLru(SETTINGS_CACHE_BYTES);

/**
 * Bounds the settings digests' cache of this isolate at `capacityBytes` (its share of the memory
 * budget), starting it empty: what it held is only computed again.
 */
export function budgetSettingsCache(capacityBytes: number): void {
  settingsCache = settingsLru(capacityBytes);
}

/** What the settings digests' cache holds (characters; bytes) and how it was used. */
export function settingsCacheStats(): CacheStats {
  return settingsCache.stats();
}

/**
 * The identity of a request's settings, tools included: a digest of their
 * {@linkcode stableJson}, remembered by their plain JSON, or by a held value's token in place of
 * its JSON (see `settingsKey`). Every turn of an agent sends the same tool list (a Claude Code
 * request holds ~30 KB of it): a lookup is cheap, while sorting keys and hashing 30 KB are not. A
 * retry's body digest extends this short string.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { settingsDigest } from "./identity.ts";
 * const settings = { model: "m", tools: [{ name: "Bash", input_schema: { type: "object" } }] };
 * assert.equal(settingsDigest(settings), settingsDigest(structuredClone(settings)));
 * assert.equal(settingsDigest({ b: 1, a: 2 }), settingsDigest({ a: 2, b: 1 }));
 * assert.notEqual(settingsDigest({ a: 1 }), settingsDigest({ a: 2 }));
 * assert.equal(settingsDigest({ a: 1 }).length, 32);
 * ```
 */
export function settingsDigest(settings: Record<string, unknown>): string {
  const key = settingsKey(settings);
  const known = settingsCache.get(key);
  if (known !== undefined) return known;
  const digest = extendDigest("settings", stableJson(settings));
  settingsCache.set(key, digest);
  return digest;
}

/**
 * What {@linkcode settingsDigest} remembers settings by: their plain JSON, or, when a field holds
 * a value parsed once for many requests (`RecurringFields`: the tools), its fields with that
 * value's token for it, so 30 KB of tools are not serialized again to look the digest up.
 */
function settingsKey(settings: Record<string, unknown>): string {
  let held = false;
  for (const name in settings) {
    if (recurringToken(settings[name]) !== undefined) held = true;
  }
  if (!held) return JSON.stringify(settings);
  // Fields left out as JSON leaves them out of an object: `undefined` is not `null`.
  return JSON.stringify(
    Object.entries(settings).flatMap(([name, value]) =>
      value === undefined ? [] : [[name, recurringToken(value) ?? value]]
    ),
  );
}
