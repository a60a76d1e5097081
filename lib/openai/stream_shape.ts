/**
 * Chat Completions' stream of a turn, as bytes at each point: the role chunk (at once, unless it
 * waits for the prompt ids), the content chunks as the engine samples them, `: keep-alive`
 * comments while it works, the finish chunks and `data: [DONE]` at the end; or a
 * `data: {"error": …}` event, which the OpenAI SDKs raise as an `APIError`, if the turn fails
 * after the stream started.
 *
 * @module
 */
import type { StreamShape } from "../session/mod.ts";
import { openaiErrorBody } from "./error_body.ts";
import {
  ChunkStreamWriter,
  DONE_EVENT,
  encodeData,
  KEEPALIVE_EVENT,
  roleChunk,
  type StreamOptions,
} from "./stream_response.ts";
import type { ChatCompletion } from "./types.ts";

/** What a Chat Completions stream of a turn is built from. */
export interface ChunkStreamTurn {
  /** The request's id, sent as `x-request-id` too. */
  readonly requestId: string;
  /** Id, model and creation time every chunk carries. */
  readonly head: { readonly id: string; readonly model: string; readonly created: number };
  /** Engine request id of the turn (tool-call ids derive from it). */
  readonly rid: string;
  readonly options: StreamOptions;
  /**
   * The role chunk carries `prompt_token_ids` (`return_token_ids`, the vLLM convention: prompt
   * ids in the first chunk); it waits for the turn when they are not known before (a replay).
   */
  readonly promptIdsFirst: boolean;
  readonly promptIds: readonly number[] | null;
}

/**
 * The Chat Completions stream of a turn; a failure as `data: {"error": …}` in OpenAI's envelope,
 * with the gateway's error code as `code`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { chunkStreamShape } from "./stream_shape.ts";
 * const shape = chunkStreamShape({
 *   requestId: "req_1",
 *   head: { id: "chatcmpl-1", model: "m", created: 0 },
 *   rid: "1",
 *   options: { includeUsage: false },
 *   promptIdsFirst: false,
 *   promptIds: null,
 * });
 * assert.equal(new TextDecoder().decode(shape.keepAlive), ": keep-alive\n\n");
 * assert.deepEqual(shape.headers, { "x-request-id": "req_1" });
 * ```
 */
export function chunkStreamShape(turn: ChunkStreamTurn): StreamShape<ChatCompletion> {
  const writer = new ChunkStreamWriter(turn.head, turn.options, turn.rid);
  const roleWaits = turn.promptIdsFirst && turn.promptIds === null;
  return {
    head: roleWaits
      ? []
      : [encodeData(roleChunk(turn.head, turn.options, turn.promptIds ?? undefined))],
    keepAlive: KEEPALIVE_EVENT,
    content: (events) => writer.content(events).map(encodeData),
    body: (completion) => [
      ...(roleWaits
        ? [encodeData(roleChunk(turn.head, turn.options, completion.prompt_token_ids))]
        : []),
      ...writer.finish(completion).map(encodeData),
      DONE_EVENT,
    ],
    failure: ({ type, message, code }) => encodeData(openaiErrorBody(type, message, code)),
    headers: { "x-request-id": turn.requestId },
  };
}
