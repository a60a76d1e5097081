/**
 * The streaming form of a response: Anthropic's SSE event grammar (reference §1.6). Every event
 * has an `event:` line and a JSON `data:` line whose `type` matches; blocks are opened, filled
 * and closed one at a time with dense indexes; tool input travels only in `input_json_delta`.
 *
 * @module
 */
import type { OutputEvent } from "../output/mod.ts";
import { toolUseId } from "./build_response.ts";
import type { ContentBlock, Message } from "./types.ts";
import type { ErrorType } from "./error_body.ts";

/** One server-sent event. */
export interface SseEvent {
  readonly event: string;
  readonly data: { readonly type: string; readonly [key: string]: unknown };
}

/** Longest piece of text or JSON sent in one delta. */
const DELTA_CHARS = 256;

/**
 * The events of a message streamed as it is sampled: blocks opened, filled and closed as the
 * output's events arrive (a thinking block signed when it closes, a tool call sent whole), then
 * at the end the message's stop reason and usage. Its blocks add up to the finished message's
 * (the output events add up to its parse); a message with nothing streamed (a replay) is sent
 * whole at the end.
 */
export class MessageStreamWriter {
  readonly #rid: string;
  readonly #sign: (thinking: string) => string;
  /** The block being filled, if any. */
  #open: { index: number; type: "text" | "thinking"; text: string } | null = null;
  #blocks = 0;
  #calls = 0;

  /** A writer for the message of engine request `rid`, signing thinking with `sign`. */
  constructor(rid: string, sign: (thinking: string) => string) {
    this.#rid = rid;
    this.#sign = sign;
  }

  /** The events for output events as sampled. */
  content(events: readonly OutputEvent[]): SseEvent[] {
    const out: SseEvent[] = [];
    for (const event of events) {
      if (event.index !== this.#open?.index) {
        out.push(...this.#close());
        this.#blocks = event.index + 1;
        if (event.type === "tool_call") {
          const block: ContentBlock = {
            type: "tool_use",
            id: toolUseId(this.#rid, this.#calls++),
            name: event.name,
            input: event.input,
          };
          out.push(...blockEvents(block, event.index));
          continue;
        }
        this.#open = { index: event.index, type: event.type, text: "" };
        out.push(
          blockStart(
            event.index,
            event.type === "text"
              ? { type: "text", text: "" }
              : { type: "thinking", thinking: "", signature: "" },
          ),
        );
      }
      const open = this.#open!;
      const text = event.type === "text"
        ? event.text
        : event.type === "thinking"
        ? event.thinking
        : "";
      open.text += text;
      for (const piece of pieces(text)) {
        out.push(blockDelta(
          open.index,
          open.type === "text"
            ? { type: "text_delta", text: piece }
            : { type: "thinking_delta", thinking: piece },
        ));
      }
    }
    return out;
  }

  /** The events that end `message`: blocks not streamed yet, `message_delta`, `message_stop`. */
  finish(message: Message): SseEvent[] {
    const out = this.#close();
    message.content.slice(this.#blocks).forEach((block, i) =>
      out.push(...blockEvents(block, this.#blocks + i))
    );
    this.#blocks = message.content.length;
    out.push(...messageEndEvents(message));
    return out;
  }

  #close(): SseEvent[] {
    const open = this.#open;
    if (open === null) return [];
    this.#open = null;
    return [
      ...(open.type === "thinking"
        ? [blockDelta(open.index, { type: "signature_delta", signature: this.#sign(open.text) })]
        : []),
      blockStop(open.index),
    ];
  }
}

/** The `message_start` event: the message with no content and no stop reason yet. */
export function messageStartEvent(message: Message): SseEvent {
  return {
    event: "message_start",
    data: {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...message.usage, output_tokens: 0 },
      },
    },
  };
}

/** Every event after `message_start`: the blocks, `message_delta` and `message_stop`. */
export function messageBodyEvents(message: Message): SseEvent[] {
  const events: SseEvent[] = [];
  message.content.forEach((block, index) => events.push(...blockEvents(block, index)));
  events.push(...messageEndEvents(message));
  return events;
}

/** `message_delta` with the stop reason and usage, then `message_stop`. */
function messageEndEvents(message: Message): SseEvent[] {
  const events: SseEvent[] = [];
  events.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
      usage: message.usage,
    },
  });
  events.push({ event: "message_stop", data: { type: "message_stop" } });
  return events;
}

/**
 * The whole event sequence of a message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageEvents } from "./stream_response.ts";
 * import { messageHead } from "./messages_turn.ts";
 * const message = {
 *   ...messageHead("0123456789abcdef", "m", 5),
 *   content: [{ type: "text" as const, text: "hi" }],
 * };
 * assert.deepEqual(messageEvents(message).map((e) => e.event), [
 *   "message_start",
 *   "content_block_start",
 *   "content_block_delta",
 *   "content_block_stop",
 *   "message_delta",
 *   "message_stop",
 * ]);
 * ```
 */
export function messageEvents(message: Message): SseEvent[] {
  return [messageStartEvent(message), ...messageBodyEvents(message)];
}

function blockStart(index: number, content_block: unknown): SseEvent {
  return {
    event: "content_block_start",
    data: { type: "content_block_start", index, content_block },
  };
}

function blockDelta(index: number, delta: unknown): SseEvent {
  return { event: "content_block_delta", data: { type: "content_block_delta", index, delta } };
}

function blockStop(index: number): SseEvent {
  return { event: "content_block_stop", data: { type: "content_block_stop", index } };
}

function blockEvents(block: ContentBlock, index: number): SseEvent[] {
  const start = (content_block: unknown) => blockStart(index, content_block);
  const delta = (delta: unknown) => blockDelta(index, delta);
  const stop = blockStop(index);
  switch (block.type) {
    case "text":
      return [
        start({ type: "text", text: "" }),
        ...pieces(block.text).map((text) => delta({ type: "text_delta", text })),
        stop,
      ];
    case "thinking":
      return [
        start({ type: "thinking", thinking: "", signature: "" }),
        ...pieces(block.thinking).map((thinking) => delta({ type: "thinking_delta", thinking })),
        delta({ type: "signature_delta", signature: block.signature }),
        stop,
      ];
    case "tool_use":
      return [
        start({ type: "tool_use", id: block.id, name: block.name, input: {} }),
        ...pieces(JSON.stringify(block.input)).map((partial_json) =>
          delta({ type: "input_json_delta", partial_json })
        ),
        stop,
      ];
  }
}

/** `text` cut into pieces of at most {@linkcode DELTA_CHARS}, never inside a surrogate pair. */
function pieces(text: string): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + DELTA_CHARS, text.length);
    const code = text.charCodeAt(end - 1);
    if (end < text.length && code >= 0xd800 && code <= 0xdbff) end -= 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out.length > 0 ? out : [""];
}

/** The keep-alive event sent while the engine works. */
export const PING_EVENT: SseEvent = { event: "ping", data: { type: "ping" } };

/** The mid-stream error event, for failures after the stream has started. */
export function errorEvent(type: ErrorType, message: string): SseEvent {
  return { event: "error", data: { type: "error", error: { type, message } } };
}

const encoder = new TextEncoder();

/** The wire bytes of one event. */
export function encodeSse(event: SseEvent): Uint8Array {
  return encoder.encode(`event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`);
}
