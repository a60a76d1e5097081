/**
 * Builds the Responses API's response object from a turn's parsed output (T6): in the output's
 * order, a reasoning item per thinking block, a message item per run of text, a function call
 * item per tool call; the status (`incomplete` at the token limit) and the usage.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { toolCallId } from "../openai/mod.ts";
import type { TurnOutput } from "../session/mod.ts";
import { offeredFunctions } from "./offered_functions.ts";
import type { OutputItem, ResponseCreateParams, ResponseObject, ResponseUsage } from "./types.ts";

/**
 * The response. Ids derive from the engine request id, so the reply of a recorded turn, rebuilt,
 * has the same ids; call ids are the ones Chat Completions gives.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildResponse } from "./build_response.ts";
 * const output = {
 *   rid: "0123456789abcdef",
 *   blocks: [{ type: "text" as const, text: "Hello." }],
 *   end: { reason: "end_of_turn" as const, stopSequence: null },
 *   inputTokens: 5,
 *   outputTokens: 3,
 *   outputIds: [9707, 13, 151645],
 *   logprobs: [-0.1, -0.2, 0],
 * };
 * const response = buildResponse(output, { model: "m", input: "hi" }, 1_700_000_000);
 * assert.deepEqual(response.output.map((item) => item.type), ["message"]);
 * ```
 */
export function buildResponse(
  output: TurnOutput,
  request: ResponseCreateParams,
  createdAt: number,
): ResponseObject {
  const items: OutputItem[] = [];
  const incomplete = output.end.reason === "length";
  const { namespaceOf } = offeredFunctions(request.tools);
  let calls = 0;
  const encrypted = wantsEncrypted(request);
  for (const block of output.blocks) {
    const last = items.at(-1);
    if (block.type === "thinking") {
      items.push(reasoningItem(itemId("rs", output.rid, items.length), block.thinking, encrypted));
    } else if (block.type === "text") {
      if (last?.type === "message") last.content[0].text += `\n${block.text}`;
      else items.push(messageItem(itemId("msg", output.rid, items.length), block.text));
    } else {
      items.push(
        functionCallItem(output.rid, items.length, calls++, block, namespaceOf(block.name)),
      );
    }
  }
  // The token limit cut the last item; a message before it was complete when the next began.
  const last = items.at(-1);
  if (incomplete && last?.type === "message") last.status = "incomplete";
  return {
    ...responseHead(`resp_${output.rid}`, request, createdAt),
    status: incomplete ? "incomplete" : "completed",
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    output: items,
    usage: responseUsage(output.inputTokens, output.outputTokens),
  };
}

/** A reasoning item holding `thinking`, carried in `encrypted_content` too when asked for. */
export function reasoningItem(id: string, thinking: string, encrypted: boolean): OutputItem {
  return {
    type: "reasoning",
    id,
    summary: [],
    content: [{ type: "reasoning_text", text: thinking }],
    ...(encrypted ? { encrypted_content: thinking } : {}),
    status: "completed",
  };
}

/**
 * Tool call `call` of the turn `rid`, the `callIndex`th call, at `outputIndex` in the output; with
 * the `namespace` its function was offered in, if any.
 */
export function functionCallItem(
  rid: string,
  outputIndex: number,
  callIndex: number,
  call: { readonly name: string; readonly input: Record<string, unknown> },
  namespace: string | null = null,
): OutputItem {
  return {
    type: "function_call",
    id: itemId("fc", rid, outputIndex),
    call_id: toolCallId(rid, callIndex),
    name: call.name,
    ...(namespace === null ? {} : { namespace }),
    arguments: JSON.stringify(call.input),
    status: "completed",
  };
}

/** A complete assistant message item holding `text`. */
export function messageItem(id: string, text: string): OutputItem {
  return {
    type: "message",
    id,
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text, annotations: [] }],
  };
}

/**
 * The response as `response.created` announces it: every setting echoed, no output yet.
 */
export function responseHead(
  id: string,
  request: ResponseCreateParams,
  createdAt: number,
): ResponseObject {
  return {
    id,
    object: "response",
    created_at: createdAt,
    status: "in_progress",
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    model: request.model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: {
      effort: request.reasoning?.effort ?? null,
      summary: request.reasoning?.summary ?? null,
    },
    store: request.store ?? true,
    temperature: request.temperature ?? null,
    text: request.text ?? { format: { type: "text" } },
    tool_choice: request.tool_choice ?? "auto",
    tools: request.tools ?? [],
    top_p: request.top_p ?? null,
    truncation: request.truncation ?? "disabled",
    usage: null,
    metadata: request.metadata ?? {},
  };
}

/** Token counts in this API's shape (no prompt caching is reported). */
export function responseUsage(inputTokens: number, outputTokens: number): ResponseUsage {
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
}

/**
 * `include: ["reasoning.encrypted_content"]`: a stateless client (`store: false`) keeps the
 * reasoning only through this field. The gateway has nothing to hide from its own model: it
 * carries the reasoning text, which the translation reads back when an echo has nothing else.
 */
export function wantsEncrypted(request: ResponseCreateParams): boolean {
  return request.include?.includes("reasoning.encrypted_content") === true;
}

/** An item id: `prefix_` and 24 hex digits, unique per request and position. */
export function itemId(prefix: string, rid: string, index: number): string {
  return `${prefix}_${
    createHash("sha256").update(`${rid}:${prefix}:${index}`).digest("hex").slice(0, 24)
  }`;
}

/**
 * The reply to a request for no tokens: nothing sampled, nothing recorded, incomplete at its
 * `max_output_tokens`. `head` is the response as `response.created` announces it.
 */
export function unsampledResponse(head: ResponseObject, inputTokens: number): ResponseObject {
  return {
    ...head,
    status: "incomplete",
    incomplete_details: { reason: "max_output_tokens" },
    usage: responseUsage(inputTokens, 0),
  };
}
