/**
 * The identity of an Anthropic message: a canonical JSON string of what the message says,
 * without presentation details (`cache_control`, string vs. one text block, key order), so a
 * client echoing history back is recognised even when it moves cache markers around.
 *
 * @module
 */
import type { ContentBlock, ContentBlockParam, MessageParam } from "./types.ts";

/**
 * Canonical JSON of a message.
 *
 * @example
 * ```ts
 * messageIdentity({ role: "user", content: "hi" }) ===
 *   messageIdentity({ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] });
 * // true
 * ```
 */
export function messageIdentity(
  message: { role: string; content: MessageParam["content"] | ContentBlock[] },
): string {
  const blocks = typeof message.content === "string"
    ? [{ type: "text", text: message.content }]
    : (message.content as ContentBlockParam[]).map(blockIdentity);
  return JSON.stringify({ role: message.role, content: blocks });
}

/**
 * Identity of a conversation's start: the system text the model sees. Tools are not part of it:
 * a client may offer more tools mid-conversation, and the chain renders them in its delta.
 */
export function startIdentity(system: string): string {
  return stableJson({ system });
}

/** The fields of a block that make up its identity; strings are shared, not copied. */
function blockIdentity(block: ContentBlockParam): unknown {
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
        tool_use_id: block.tool_use_id,
        is_error: block.is_error ?? false,
        content: block.content === undefined
          ? []
          : typeof block.content === "string"
          ? [{ type: "text", text: block.content }]
          : block.content.map((inner) => blockIdentity(inner as ContentBlockParam)),
      };
    default:
      return sortKeys(withoutCacheControl(block));
  }
}

/** Any other block minus `cache_control`, nested content blocks included. */
function withoutCacheControl(block: Record<string, unknown>): Record<string, unknown> {
  const { cache_control: _, ...rest } = block;
  if (Array.isArray(rest.content)) {
    rest.content = rest.content.map((inner) =>
      typeof inner === "object" && inner !== null
        ? blockIdentity(inner as ContentBlockParam)
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
 * stableJson({ b: 1, a: [2, { d: 3, c: 4 }] }); // '{"a":[2,{"c":4,"d":3}],"b":1}'
 * ```
 */
export function stableJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}
