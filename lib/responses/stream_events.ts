/**
 * A response as the Responses API streams it: `response.created` and `response.in_progress`
 * first, then per output item `response.output_item.added`, its content (for each part of a
 * reasoning item or a message, `response.content_part.added`, its
 * `response.reasoning_text.delta`/`.done` or `response.output_text.delta`/`.done`, and
 * `response.content_part.done`; a function call's
 * `response.function_call_arguments.delta`/`.done`) and `response.output_item.done`, then
 * `response.completed` (or `response.incomplete`). Every event carries its `sequence_number`;
 * each is sent as `event: <type>` and `data: <json>`.
 *
 * @module
 */
import type { OutputEvent } from "../output/mod.ts";
import { functionCallItem, itemId, messageItem, reasoningItem } from "./build_response.ts";
import type { OutputItem, ResponseObject, ResponseStreamEvent } from "./types.ts";

/** Numbers the events of one stream in order, from 0. */
export class EventSequence {
  #next = 0;

  /** `fields` as an event of `type`, with the next sequence number. */
  event(type: string, fields: Record<string, unknown>): ResponseStreamEvent {
    return { type, sequence_number: this.#next++, ...fields };
  }
}

/** The events sent at once, before anything is generated. */
export function headEvents(head: ResponseObject, sequence: EventSequence): ResponseStreamEvent[] {
  return [
    sequence.event("response.created", { response: head }),
    sequence.event("response.in_progress", { response: head }),
  ];
}

/**
 * The events that stream `response`'s output and end the stream.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildResponse, responseHead } from "./build_response.ts";
 * import { bodyEvents, EventSequence, headEvents } from "./stream_events.ts";
 * const output = {
 *   rid: "0123456789abcdef",
 *   blocks: [{ type: "text" as const, text: "Hello." }],
 *   end: { reason: "end_of_turn" as const, stopSequence: null },
 *   inputTokens: 5,
 *   outputTokens: 3,
 *   outputIds: [9707, 13, 151645],
 *   logprobs: [-0.1, -0.2, 0],
 * };
 * const request = { model: "m", input: "hi" };
 * const sequence = new EventSequence();
 * const events = [
 *   ...headEvents(responseHead("resp_1", request, 0), sequence),
 *   ...bodyEvents(buildResponse(output, request, 0), sequence),
 * ];
 * assert.equal(events.at(-1)!.type, "response.completed");
 * ```
 */
export function bodyEvents(
  response: ResponseObject,
  sequence: EventSequence,
): ResponseStreamEvent[] {
  const events: ResponseStreamEvent[] = [];
  response.output.forEach((item, outputIndex) =>
    events.push(...itemEvents(item, outputIndex, sequence))
  );
  events.push(endEvent(response, sequence));
  return events;
}

/** The events that stream one whole output item. */
function itemEvents(
  item: OutputItem,
  output_index: number,
  sequence: EventSequence,
): ResponseStreamEvent[] {
  const events: ResponseStreamEvent[] = [];
  const emit = (type: string, fields: Record<string, unknown>) =>
    events.push(sequence.event(type, fields));
  emit("response.output_item.added", { output_index, item: opened(item) });
  const at = { item_id: item.id, output_index };
  if (item.type === "reasoning") {
    item.content.forEach((part, content_index) => {
      const empty = { ...part, text: "" };
      emit("response.content_part.added", { ...at, content_index, part: empty });
      emit("response.reasoning_text.delta", { ...at, content_index, delta: part.text });
      emit("response.reasoning_text.done", { ...at, content_index, text: part.text });
      emit("response.content_part.done", { ...at, content_index, part });
    });
  } else if (item.type === "message") {
    item.content.forEach((part, content_index) => {
      const empty = { ...part, text: "" };
      emit("response.content_part.added", { ...at, content_index, part: empty });
      emit("response.output_text.delta", { ...at, content_index, delta: part.text, logprobs: [] });
      emit("response.output_text.done", { ...at, content_index, text: part.text, logprobs: [] });
      emit("response.content_part.done", { ...at, content_index, part });
    });
  } else {
    emit("response.function_call_arguments.delta", { ...at, delta: item.arguments });
    emit("response.function_call_arguments.done", {
      ...at,
      name: item.name,
      arguments: item.arguments,
    });
  }
  emit("response.output_item.done", { output_index, item });
  return events;
}

/** `response.completed`, or `response.incomplete` at the token limit. */
function endEvent(response: ResponseObject, sequence: EventSequence): ResponseStreamEvent {
  return sequence.event(
    response.status === "incomplete" ? "response.incomplete" : "response.completed",
    { response },
  );
}

/** A reasoning or message item being filled as the output streams. */
interface OpenItem {
  readonly type: "reasoning" | "message";
  readonly id: string;
  readonly outputIndex: number;
  text: string;
}

/**
 * The events of a response streamed as it is sampled: a reasoning item per thinking block and a
 * message item per run of text (its blocks joined by a newline) opened and filled as the
 * output's events arrive, a function call item sent whole; at the end the last item closed as
 * the response has it, and `response.completed` (or `.incomplete`). Its items add up to the
 * response's; a response with nothing streamed (a replay) is sent whole at the end.
 */
export class ResponseStreamWriter {
  readonly #sequence: EventSequence;
  readonly #rid: string;
  readonly #encrypted: boolean;
  readonly #namespaceOf: (name: string) => string | null;
  #items = 0;
  #calls = 0;
  #block = -1;
  #open: OpenItem | null = null;

  /**
   * A writer numbering events with `sequence`, for engine request `rid`; `encrypted` when the
   * request asked for `reasoning.encrypted_content`; `namespaceOf` names the namespace a called
   * function was offered in (`offeredFunctions`).
   */
  constructor(
    sequence: EventSequence,
    rid: string,
    encrypted: boolean,
    namespaceOf: (name: string) => string | null = () => null,
  ) {
    this.#sequence = sequence;
    this.#rid = rid;
    this.#encrypted = encrypted;
    this.#namespaceOf = namespaceOf;
  }

  /** The events for output events as sampled. */
  content(events: readonly OutputEvent[]): ResponseStreamEvent[] {
    const out: ResponseStreamEvent[] = [];
    const emit = (type: string, fields: Record<string, unknown>) =>
      out.push(this.#sequence.event(type, fields));
    for (const event of events) {
      const opens = event.index !== this.#block;
      this.#block = event.index;
      if (event.type === "tool_call") {
        out.push(...this.#close());
        const outputIndex = this.#items++;
        const item = functionCallItem(
          this.#rid,
          outputIndex,
          this.#calls++,
          event,
          this.#namespaceOf(event.name),
        );
        out.push(...itemEvents(item, outputIndex, this.#sequence));
        continue;
      }
      const type = event.type === "text" ? "message" : "reasoning";
      let text = event.type === "text" ? event.text : event.thinking;
      if (opens && this.#open?.type === "message" && type === "message") text = `\n${text}`;
      else if (opens) {
        out.push(...this.#close());
        const outputIndex = this.#items++;
        const id = itemId(type === "message" ? "msg" : "rs", this.#rid, outputIndex);
        this.#open = { type, id, outputIndex, text: "" };
        const item = this.#item(this.#open);
        emit("response.output_item.added", { output_index: outputIndex, item: opened(item) });
        if (item.type !== "function_call") {
          emit("response.content_part.added", {
            item_id: id,
            output_index: outputIndex,
            content_index: 0,
            part: item.content[0],
          });
        }
      }
      const open = this.#open!;
      open.text += text;
      const at = { item_id: open.id, output_index: open.outputIndex, content_index: 0 };
      if (type === "message") {
        emit("response.output_text.delta", { ...at, delta: text, logprobs: [] });
      } else emit("response.reasoning_text.delta", { ...at, delta: text });
    }
    return out;
  }

  /** The events that end `response`: the open item closed as it has it, items not streamed yet, the end. */
  finish(response: ResponseObject): ResponseStreamEvent[] {
    if (this.#block < 0) return bodyEvents(response, this.#sequence);
    const out = this.#close(response.output);
    response.output.slice(this.#items).forEach((item, i) =>
      out.push(...itemEvents(item, this.#items + i, this.#sequence))
    );
    this.#items = response.output.length;
    out.push(endEvent(response, this.#sequence));
    return out;
  }

  /** The open item as streamed so far, complete. */
  #item(open: OpenItem): OutputItem {
    return open.type === "message"
      ? messageItem(open.id, open.text)
      : reasoningItem(open.id, open.text, this.#encrypted);
  }

  /** Closes the open item: as `output` has it at the end, else as streamed (complete). */
  #close(output?: readonly OutputItem[]): ResponseStreamEvent[] {
    const open = this.#open;
    if (open === null) return [];
    this.#open = null;
    const { id, outputIndex: output_index } = open;
    const item = output?.[output_index] ?? this.#item(open);
    const at = { item_id: id, output_index, content_index: 0 };
    const events: ResponseStreamEvent[] = [];
    const emit = (type: string, fields: Record<string, unknown>) =>
      events.push(this.#sequence.event(type, fields));
    if (item.type === "message") {
      const part = item.content[0];
      emit("response.output_text.done", { ...at, text: part.text, logprobs: [] });
      emit("response.content_part.done", { ...at, part });
    } else if (item.type === "reasoning") {
      const part = item.content[0];
      emit("response.reasoning_text.done", { ...at, text: part.text });
      emit("response.content_part.done", { ...at, part });
    }
    emit("response.output_item.done", { output_index, item });
    return events;
  }
}

/** The event that ends a stream whose turn failed after it started. */
export function failedEvent(
  head: ResponseObject,
  error: { code: string; message: string },
  sequence: EventSequence,
): ResponseStreamEvent {
  return sequence.event("response.failed", {
    response: { ...head, status: "failed", error },
  });
}

/** One SSE event. */
export function encodeEvent(event: ResponseStreamEvent): Uint8Array {
  return encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

const encoder = new TextEncoder();

/** An item as `response.output_item.added` shows it: before its content streams. */
function opened(item: OutputItem): OutputItem {
  switch (item.type) {
    case "reasoning":
      return { ...item, content: [], status: "in_progress" };
    case "message":
      return { ...item, content: [], status: "in_progress" };
    case "function_call":
      return { ...item, arguments: "", status: "in_progress" };
  }
}
