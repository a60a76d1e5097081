/**
 * The Messages API's stream of a turn, as bytes at each point: `message_start` at once, the
 * content events as the engine samples them, `ping`s while it works, the rest of the message at
 * the end (`message_delta`, `message_stop`), or an `error` event if the turn fails after the
 * stream started.
 *
 * @module
 */
import type { StreamShape } from "../session/mod.ts";
import {
  encodeSse,
  errorEvent,
  messageStartEvent,
  MessageStreamWriter,
  PING_EVENT,
} from "./stream_response.ts";
import type { Message } from "./types.ts";

/** What a Messages stream of a turn is built from. */
export interface MessageStreamTurn {
  /** The message as `message_start` announces it. */
  readonly head: Message;
  /** Engine request id of the turn (tool-use ids derive from it). */
  readonly rid: string;
  /** Signs a thinking block's text, as the message's blocks are signed. */
  readonly sign: (thinking: string) => string;
}

/**
 * The Anthropic SSE stream of a turn: `message_start`, the content events, `ping`s, the end; a
 * failure as Anthropic's mid-stream `error` event. No headers beyond the stream's own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageHead } from "./messages_turn.ts";
 * import { messageStreamShape } from "./stream_shape.ts";
 * const shape = messageStreamShape({
 *   head: messageHead("0123456789abcdef", "m", 5),
 *   rid: "0123456789abcdef",
 *   sign: () => "sig",
 * });
 * assert.equal(new TextDecoder().decode(shape.keepAlive), 'event: ping\ndata: {"type":"ping"}\n\n');
 * ```
 */
export function messageStreamShape(turn: MessageStreamTurn): StreamShape<Message> {
  const writer = new MessageStreamWriter(turn.rid, turn.sign);
  return {
    head: [encodeSse(messageStartEvent(turn.head))],
    keepAlive: encodeSse(PING_EVENT),
    content: (events) => writer.content(events).map(encodeSse),
    body: (message) => writer.finish(message).map(encodeSse),
    failure: ({ type, message }) => encodeSse(errorEvent(type, message)),
    headers: {},
  };
}
