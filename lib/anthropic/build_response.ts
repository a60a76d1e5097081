/**
 * Builds the Anthropic response message from a parsed output (T6): thinking blocks signed,
 * tool calls given ids, and the stop reason derived from how the engine finished.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { OutputBlock } from "../output/mod.ts";
import type { ContentBlock, Message, StopReason, Usage } from "./types.ts";

/** How generation ended, protocol-neutral. */
export type Finish =
  | { readonly kind: "end_of_turn" }
  | { readonly kind: "length" }
  | { readonly kind: "stop_sequence"; readonly matched: string };

/** Everything a response message is made of. */
export interface ResponseParts {
  /** Engine request id of the turn; message and tool-use ids derive from it. */
  readonly rid: string;
  readonly model: string;
  readonly blocks: readonly OutputBlock[];
  readonly finish: Finish;
  readonly usage: Usage;
  /** Signs a thinking block's text. */
  readonly sign: (thinking: string) => string;
}

/**
 * The response message. Ids are derived from the engine request id, so rebuilding the
 * message of a recorded turn gives the same ids.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildMessage } from "./build_response.ts";
 * const message = buildMessage({
 *   rid: "0123456789abcdef",
 *   model: "m",
 *   blocks: [{ type: "text", text: "hi" }],
 *   finish: { kind: "end_of_turn" },
 *   usage: {
 *     input_tokens: 5,
 *     output_tokens: 2,
 *     cache_creation_input_tokens: 0,
 *     cache_read_input_tokens: 0,
 *   },
 *   sign: () => "signature",
 * });
 * assert.equal(message.id, "msg_0123456789abcdef");
 * assert.equal(message.stop_reason, "end_turn");
 * ```
 */
export function buildMessage(parts: ResponseParts): Message {
  let calls = 0;
  const content = parts.blocks.map((block): ContentBlock => {
    switch (block.type) {
      case "thinking":
        return {
          type: "thinking",
          thinking: block.thinking,
          signature: parts.sign(block.thinking),
        };
      case "text":
        return { type: "text", text: block.text };
      case "tool_call":
        return {
          type: "tool_use",
          id: toolUseId(parts.rid, calls++),
          name: block.name,
          input: block.input,
        };
    }
  });
  return {
    id: `msg_${parts.rid}`,
    type: "message",
    role: "assistant",
    model: parts.model,
    content,
    stop_reason: stopReason(parts.finish, calls > 0),
    stop_sequence: parts.finish.kind === "stop_sequence" ? parts.finish.matched : null,
    usage: parts.usage,
  };
}

function stopReason(finish: Finish, calledTools: boolean): StopReason {
  switch (finish.kind) {
    case "end_of_turn":
      return calledTools ? "tool_use" : "end_turn";
    case "length":
      return "max_tokens";
    case "stop_sequence":
      return "stop_sequence";
  }
}

/** A tool-use id in Anthropic's alphabet, unique per engine request and call index. */
export function toolUseId(rid: string, index: number): string {
  return `toolu_${createHash("sha256").update(`${rid}:${index}`).digest("hex").slice(0, 24)}`;
}
