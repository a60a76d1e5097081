/**
 * A Chat Completions response as a stream of `chat.completion.chunk` events in OpenAI's order
 * (reference anthropic-openai-api.md §3.3): the role, then reasoning, content and each tool call
 * (its id and name, then its arguments), then the finish reason, the usage when
 * `stream_options.include_usage` asked for it, and `data: [DONE]`. Each event is `data: <json>`
 * with no `event:` line; keep-alives are SSE comments, which clients skip.
 *
 * @module
 */
import type { OutputEvent } from "../output/mod.ts";
import { toolCallId } from "./build_response.ts";
import type { ChatCompletion, ChatCompletionChunk } from "./types.ts";

type ChunkChoice = ChatCompletionChunk["choices"][number];

/** How a stream is shaped beyond the completion itself. */
export interface StreamOptions {
  /** `stream_options.include_usage`: a last chunk with `choices: []` and the usage. */
  readonly includeUsage: boolean;
}

/**
 * The first chunk: the assistant's role, announced before anything is generated.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { roleChunk } from "./stream_response.ts";
 * const chunk = roleChunk({ id: "chatcmpl-1", model: "m", created: 0 }, { includeUsage: false });
 * assert.deepEqual(chunk.choices[0].delta, { role: "assistant" });
 * ```
 */
export function roleChunk(
  head: { readonly id: string; readonly model: string; readonly created: number },
  options: StreamOptions,
  promptIds?: readonly number[],
): ChatCompletionChunk {
  return {
    ...envelope(head, options),
    choices: [choice({ role: "assistant" })],
    ...(promptIds ? { prompt_token_ids: [...promptIds] } : {}),
  };
}

/**
 * The chunks after the role chunk that stream `completion`. Logprobs and token ids travel with
 * the first chunk of the message's body.
 */
export function bodyChunks(
  completion: ChatCompletion,
  options: StreamOptions,
): ChatCompletionChunk[] {
  const [only] = completion.choices;
  const { message } = only;
  const base = envelope(completion, options);
  const deltas: ChunkChoice["delta"][] = [];
  if (message.reasoning_content) deltas.push({ reasoning_content: message.reasoning_content });
  if (message.content) deltas.push({ content: message.content });
  (message.tool_calls ?? []).forEach((call, index) => {
    deltas.push({
      tool_calls: [{
        index,
        id: call.id,
        type: "function",
        function: { name: call.function.name, arguments: "" },
      }],
    });
    deltas.push({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] });
  });
  const chunks = deltas.map((delta) => ({ ...base, choices: [choice(delta)] }));
  const finish = { ...base, choices: [choice({}, only.finish_reason)] };
  chunks.push(finish);
  const first = chunks[0].choices[0];
  if (only.logprobs) first.logprobs = only.logprobs;
  if (only.token_ids) first.token_ids = only.token_ids;
  if (options.includeUsage) chunks.push({ ...base, choices: [], usage: completion.usage });
  return chunks;
}

/**
 * The chunks of a completion streamed as it is sampled: reasoning and content deltas as the
 * output's events arrive (the blocks of each joined by a newline, as the message joins them),
 * each tool call whole (its id and name, then its arguments); at the end the finish reason, with
 * the logprobs and token ids when asked for, and the usage. A completion with nothing streamed
 * (a replay) is sent whole at the end.
 */
export class ChunkStreamWriter {
  readonly #head: { readonly id: string; readonly model: string; readonly created: number };
  readonly #options: StreamOptions;
  readonly #rid: string;
  #index = -1;
  #texts = 0;
  #thoughts = 0;
  #calls = 0;

  constructor(
    head: { readonly id: string; readonly model: string; readonly created: number },
    options: StreamOptions,
    rid: string,
  ) {
    this.#head = head;
    this.#options = options;
    this.#rid = rid;
  }

  /** The chunks for output events as sampled. */
  content(events: readonly OutputEvent[]): ChatCompletionChunk[] {
    const base = envelope(this.#head, this.#options);
    const deltas: ChunkChoice["delta"][] = [];
    for (const event of events) {
      const opens = event.index !== this.#index;
      this.#index = event.index;
      if (event.type === "tool_call") {
        const index = this.#calls++;
        deltas.push({
          tool_calls: [{
            index,
            id: toolCallId(this.#rid, index),
            type: "function",
            function: { name: event.name, arguments: "" },
          }],
        });
        deltas.push({
          tool_calls: [{ index, function: { arguments: JSON.stringify(event.input) } }],
        });
      } else if (event.type === "text") {
        const joint = opens && this.#texts++ > 0 ? "\n" : "";
        deltas.push({ content: joint + event.text });
      } else {
        const joint = opens && this.#thoughts++ > 0 ? "\n" : "";
        deltas.push({ reasoning_content: joint + event.thinking });
      }
    }
    return deltas.map((delta) => ({ ...base, choices: [choice(delta)] }));
  }

  /** The chunks that end `completion`: the finish reason (logprobs, token ids), the usage. */
  finish(completion: ChatCompletion): ChatCompletionChunk[] {
    if (this.#index < 0) return bodyChunks(completion, this.#options);
    const [only] = completion.choices;
    const base = envelope(completion, this.#options);
    const finish: ChunkChoice = choice({}, only.finish_reason);
    if (only.logprobs) finish.logprobs = only.logprobs;
    if (only.token_ids) finish.token_ids = only.token_ids;
    return [
      { ...base, choices: [finish] },
      ...(this.#options.includeUsage ? [{ ...base, choices: [], usage: completion.usage }] : []),
    ];
  }
}

/** One SSE event carrying `data`. */
export function encodeData(data: unknown): Uint8Array {
  return encoder.encode(`data: ${JSON.stringify(data)}\n\n`);
}

/** The event that ends every stream. */
export const DONE_EVENT: Uint8Array = new TextEncoder().encode("data: [DONE]\n\n");

/** A keep-alive: an SSE comment. */
export const KEEPALIVE_EVENT: Uint8Array = new TextEncoder().encode(": keep-alive\n\n");

const encoder = new TextEncoder();

function envelope(
  head: { readonly id: string; readonly model: string; readonly created: number },
  options: StreamOptions,
): Omit<ChatCompletionChunk, "choices"> {
  return {
    id: head.id,
    object: "chat.completion.chunk",
    created: head.created,
    model: head.model,
    ...(options.includeUsage ? { usage: null } : {}),
  };
}

function choice(
  delta: ChunkChoice["delta"],
  finishReason: ChunkChoice["finish_reason"] = null,
): ChunkChoice {
  return { index: 0, delta, logprobs: null, finish_reason: finishReason };
}
