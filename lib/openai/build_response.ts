/**
 * Builds the Chat Completions response from a turn's parsed output (T6): text as `content`,
 * reasoning as `reasoning_content`, tool calls with ids and JSON arguments, the finish reason,
 * and on request the engine's logprobs and the token ids.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { TurnOutput } from "../session/mod.ts";
import type {
  ChatCompletion,
  CompletionUsage,
  FinishReason,
  TokenLogprob,
  ToolCall,
} from "./types.ts";

/** What the client asked to see beyond the message. */
export interface ResponseOptions {
  readonly model: string;
  /** `logprobs: true`: the engine's logprob of every sampled token. */
  readonly logprobs: boolean;
  /** `top_logprobs`: alternatives per token (the engine's, when it gave them). */
  readonly topLogprobs: number;
  /** `return_token_ids: true`. */
  readonly tokenIds: boolean;
  /** The text of one token, as the tokenizer decodes it alone. */
  readonly decodeToken: (id: number) => string;
  /** Seconds since the epoch, for `created`. */
  readonly created: number;
}

/**
 * The response. Ids derive from the engine request id, so the reply of a recorded turn, rebuilt,
 * has the same ids.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildChatCompletion } from "./build_response.ts";
 * const output = {
 *   rid: "0123456789abcdef",
 *   blocks: [{ type: "text" as const, text: "Hello." }],
 *   end: { reason: "end_of_turn" as const, stopSequence: null },
 *   inputTokens: 5,
 *   outputTokens: 3,
 *   outputIds: [9707, 13, 151645],
 *   logprobs: [-0.1, -0.2, 0],
 * };
 * const completion = buildChatCompletion(output, {
 *   model: "m",
 *   logprobs: false,
 *   topLogprobs: 0,
 *   tokenIds: false,
 *   decodeToken: (id) => `<${id}>`,
 *   created: 0,
 * });
 * assert.equal(completion.choices[0].message.content, "Hello.");
 * ```
 */
export function buildChatCompletion(output: TurnOutput, options: ResponseOptions): ChatCompletion {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: ToolCall[] = [];
  for (const block of output.blocks) {
    if (block.type === "text") texts.push(block.text);
    else if (block.type === "thinking") reasoning.push(block.thinking);
    else {
      calls.push({
        id: toolCallId(output.rid, calls.length),
        type: "function",
        function: { name: block.name, arguments: JSON.stringify(block.input) },
      });
    }
  }
  const content = texts.join("\n");
  return {
    id: `chatcmpl-${output.rid}`,
    object: "chat.completion",
    created: options.created,
    model: options.model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: content.length > 0 || calls.length === 0 ? content : null,
        refusal: null,
        ...(reasoning.length > 0 ? { reasoning_content: reasoning.join("\n") } : {}),
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      },
      logprobs: options.logprobs
        ? { content: tokenLogprobs(output, options), refusal: null }
        : null,
      finish_reason: finishReason(output, calls.length > 0),
      ...(options.tokenIds ? { token_ids: Array.from(output.outputIds) } : {}),
    }],
    usage: completionUsage(output.inputTokens, output.outputTokens),
    ...(options.tokenIds && output.promptIds ? { prompt_token_ids: [...output.promptIds] } : {}),
  };
}

/** Token counts in OpenAI's shape (no prompt caching is reported). */
export function completionUsage(promptTokens: number, completionTokens: number): CompletionUsage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

/** A tool-call id in SGLang's alphabet (`call_` and 24 hex digits), unique per request and call. */
export function toolCallId(rid: string, index: number): string {
  return `call_${createHash("sha256").update(`${rid}:${index}`).digest("hex").slice(0, 24)}`;
}

function finishReason(output: TurnOutput, calledTools: boolean): FinishReason {
  switch (output.end.reason) {
    case "end_of_turn":
      return calledTools ? "tool_calls" : "stop";
    case "length":
      return "length";
    case "stop_sequence":
      return "stop";
  }
}

/** One entry per sampled token, the end-of-turn token included, so they align with token ids. */
function tokenLogprobs(output: TurnOutput, options: ResponseOptions): TokenLogprob[] {
  const entry = (id: number, logprob: number) => {
    const token = options.decodeToken(id);
    return { token, logprob, bytes: token.includes("\uFFFD") ? null : utf8(token) };
  };
  return Array.from(output.outputIds, (id, i) => ({
    ...entry(id, output.logprobs[i]),
    top_logprobs: (output.topLogprobs?.[i] ?? []).slice(0, options.topLogprobs).map(
      ([alternative, logprob]) => entry(alternative, logprob),
    ),
  }));
}

const encoder = new TextEncoder();

function utf8(text: string): number[] {
  return Array.from(encoder.encode(text));
}

/**
 * The reply to a request for no tokens (`max_tokens: 0`): nothing sampled, nothing recorded,
 * stopped at its length. `head` is the id, model and creation time every chunk carries.
 */
export function unsampledCompletion(
  head: { readonly id: string; readonly model: string; readonly created: number },
  promptTokens: number,
): ChatCompletion {
  return {
    ...head,
    object: "chat.completion",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "", refusal: null },
      logprobs: null,
      finish_reason: "length",
    }],
    usage: completionUsage(promptTokens, 0),
  };
}
