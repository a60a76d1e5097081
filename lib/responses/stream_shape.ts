/**
 * The Responses API's stream of a turn, as bytes at each point: `response.created` and
 * `response.in_progress` at once, the output's events as the engine samples them, `: keep-alive`
 * comments while it works, and `response.completed` (or `response.incomplete`) at the end; or
 * `response.failed` with the error if the turn fails after the stream started.
 *
 * @module
 */
import { KEEPALIVE_EVENT } from "../openai/mod.ts";
import type { StreamShape } from "../session/mod.ts";
import {
  encodeEvent,
  EventSequence,
  failedEvent,
  headEvents,
  ResponseStreamWriter,
} from "./stream_events.ts";
import type { ResponseObject } from "./types.ts";

/** What a Responses API stream of a turn is built from. */
export interface ResponseStreamTurn {
  /** The request's id, sent as `x-request-id` too. */
  readonly requestId: string;
  /** The response as `response.created` announces it. */
  readonly head: ResponseObject;
  /** Engine request id of the turn (item and call ids derive from it). */
  readonly rid: string;
  /** The request asked for `reasoning.encrypted_content`. */
  readonly encrypted: boolean;
  /** The namespace a called function was offered in (`offeredFunctions`). */
  readonly namespaceOf: (name: string) => string | null;
}

/**
 * The Responses API stream of a turn, its events numbered from 0 across the whole stream; a
 * failure as `response.failed`, the head's response with the gateway's error code and message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { responseHead } from "./build_response.ts";
 * import { responseStreamShape } from "./stream_shape.ts";
 * const shape = responseStreamShape({
 *   requestId: "req_1",
 *   head: responseHead("resp_1", { model: "m", input: "hi" }, 0),
 *   rid: "1",
 *   encrypted: false,
 *   namespaceOf: () => null,
 * });
 * assert.deepEqual(
 *   shape.head.map((bytes) => new TextDecoder().decode(bytes).split("\n")[0]),
 *   ["event: response.created", "event: response.in_progress"],
 * );
 * ```
 */
export function responseStreamShape(turn: ResponseStreamTurn): StreamShape<ResponseObject> {
  const sequence = new EventSequence();
  const writer = new ResponseStreamWriter(sequence, turn.rid, turn.encrypted, turn.namespaceOf);
  return {
    head: headEvents(turn.head, sequence).map(encodeEvent),
    keepAlive: KEEPALIVE_EVENT,
    content: (events) => writer.content(events).map(encodeEvent),
    body: (response) => writer.finish(response).map(encodeEvent),
    failure: ({ code, message }) =>
      encodeEvent(failedEvent(turn.head, { code, message }, sequence)),
    headers: { "x-request-id": turn.requestId },
  };
}
