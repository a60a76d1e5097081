/**
 * Streams one turn, as Anthropic SSE, Chat Completions chunks or Responses API events: the head
 * at once (`message_start`, the role chunk, or `response.created`), the content as the engine
 * samples it, keep-alives between (so a client's stall watchdog never fires), then the end of
 * the reply, or an error event if the turn fails after the stream started. A client that
 * disconnects aborts the turn.
 *
 * @module
 */
import {
  encodeSse,
  errorEvent,
  type Message,
  messageStartEvent,
  MessageStreamWriter,
  PING_EVENT,
} from "../lib/anthropic/mod.ts";
import type { OutputFeed } from "../lib/session/mod.ts";
import type { OutputEvent } from "../lib/output/mod.ts";
import { codeOf } from "../lib/errors/mod.ts";
import type { GatewayMetrics } from "../lib/metrics/mod.ts";
import {
  type ChatCompletion,
  ChunkStreamWriter,
  DONE_EVENT,
  encodeData,
  KEEPALIVE_EVENT,
  openaiErrorBody,
  roleChunk,
  type StreamOptions,
} from "../lib/openai/mod.ts";
import {
  encodeEvent,
  EventSequence,
  failedEvent,
  headEvents,
  type ResponseObject,
  ResponseStreamWriter,
} from "../lib/responses/mod.ts";
import { describeError } from "./_http.ts";

/** A settled promise's outcome. */
export type Settled<T> = { readonly value: T } | { readonly error: unknown };

/**
 * The outcome of `promise` if it settles within `ms` (and before `sooner`, when given, resolves),
 * else `null`; the promise keeps running.
 */
export async function settleWithin<T>(
  promise: Promise<T>,
  ms: number,
  sooner?: Promise<unknown>,
): Promise<Settled<T> | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), ms));
  const outcome = promise.then((value) => ({ value }), (error) => ({ error }));
  try {
    return await Promise.race([outcome, timeout, ...(sooner ? [sooner.then(() => null)] : [])]);
  } finally {
    clearTimeout(timer);
  }
}

/** A turn under way, as a stream sees it. */
interface StreamedTurn<T> {
  readonly requestId: string;
  /** The turn, settling with the final reply. */
  readonly done: Promise<T>;
  /** The output as it is sampled, when streamed live. */
  readonly feed: OutputFeed | null;
  /** Cancels the turn when the client goes away. */
  cancel(reason: unknown): void;
  /** True once the turn was cancelled: its failure then is the client's leaving, not an error. */
  readonly cancelled: () => boolean;
  readonly pingIntervalMs: number;
  /** Counts a failure reported after the stream started, by code. */
  readonly metrics?: GatewayMetrics;
}

/** What a protocol writes at each point of a stream. */
interface StreamShape<T> {
  /** Sent at once, before anything is generated. */
  readonly head: readonly Uint8Array[];
  /** Sent every `pingIntervalMs` while the turn works. */
  readonly keepAlive: Uint8Array;
  /** The content of output events, as they are sampled. */
  content(events: readonly OutputEvent[]): readonly Uint8Array[];
  /** The rest of the stream, once the turn is done. */
  body(reply: T): readonly Uint8Array[];
  /** The event that reports a failure after the stream started. */
  failure(error: unknown): Uint8Array;
  readonly headers: Record<string, string>;
}

/**
 * The streaming response of a turn: the head, keep-alives, then the body or a failure event; a
 * client that disconnects cancels the turn. An event has no status or headers: only the error's
 * type and message reach the client.
 */
function streamResponse<T>(turn: StreamedTurn<T>, shape: StreamShape<T>): Response {
  let timer: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (events: readonly Uint8Array[]) => {
        if (closed) return;
        for (const event of events) controller.enqueue(event);
      };
      const finish = () => {
        clearInterval(timer);
        if (!closed) controller.close();
        closed = true;
      };
      send(shape.head);
      turn.feed?.listen((events) => send(shape.content(events)));
      timer = setInterval(() => send([shape.keepAlive]), turn.pingIntervalMs);
      turn.done.then(
        (reply) => {
          send(shape.body(reply));
          finish();
        },
        (error) => {
          if (!turn.cancelled()) {
            turn.metrics?.errors.inc(codeOf(error));
            send([shape.failure(error)]);
          }
          finish();
        },
      );
    },
    cancel() {
      closed = true;
      clearInterval(timer);
      turn.cancel(new DOMException("Client disconnected", "AbortError"));
    },
  });
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "request-id": turn.requestId,
      ...shape.headers,
    },
  });
}

/** What {@linkcode sseResponse} streams. */
export interface TurnStream extends StreamedTurn<Message> {
  /** The message as `message_start` announces it. */
  readonly head: Message;
  /** Engine request id of the turn (tool-use ids derive from it). */
  readonly rid: string;
  /** Signs a thinking block's text, as the message's blocks are signed. */
  readonly sign: (thinking: string) => string;
}

/** The Anthropic SSE response of a turn: `message_start`, the content events, `ping`s. */
export function sseResponse(turn: TurnStream): Response {
  const writer = new MessageStreamWriter(turn.rid, turn.sign);
  return streamResponse(turn, {
    head: [encodeSse(messageStartEvent(turn.head))],
    keepAlive: encodeSse(PING_EVENT),
    content: (events) => writer.content(events).map(encodeSse),
    body: (message) => writer.finish(message).map(encodeSse),
    failure: (error) => {
      const { type, message } = describeError(error);
      return encodeSse(errorEvent(type, message));
    },
    headers: {},
  });
}

/** What {@linkcode chunkStreamResponse} streams. */
export interface ChunkStream extends StreamedTurn<ChatCompletion> {
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
 * The Chat Completions response of a turn: the role chunk (at once, unless it waits for the
 * prompt ids), the content chunks as sampled, `: keep-alive` comments, the finish chunks and
 * `data: [DONE]`; or a `data: {"error": …}` event, which the OpenAI SDKs raise as an `APIError`.
 */
export function chunkStreamResponse(turn: ChunkStream): Response {
  const writer = new ChunkStreamWriter(turn.head, turn.options, turn.rid);
  const roleWaits = turn.promptIdsFirst && turn.promptIds === null;
  return streamResponse(turn, {
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
    failure: (error) => {
      const { type, message } = describeError(error);
      return encodeData(openaiErrorBody(type, message, codeOf(error)));
    },
    headers: { "x-request-id": turn.requestId },
  });
}

/** What {@linkcode responseStreamResponse} streams. */
export interface ResponseStream extends StreamedTurn<ResponseObject> {
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
 * The Responses API stream of a turn: `response.created` and `response.in_progress` at once,
 * the output's events as sampled, `: keep-alive` comments, and `response.completed`; or
 * `response.failed` with the error if the turn fails after the stream started.
 */
export function responseStreamResponse(turn: ResponseStream): Response {
  const sequence = new EventSequence();
  const writer = new ResponseStreamWriter(sequence, turn.rid, turn.encrypted, turn.namespaceOf);
  return streamResponse(turn, {
    head: headEvents(turn.head, sequence).map(encodeEvent),
    keepAlive: KEEPALIVE_EVENT,
    content: (events) => writer.content(events).map(encodeEvent),
    body: (response) => writer.finish(response).map(encodeEvent),
    failure: (error) => {
      const { message } = describeError(error);
      return encodeEvent(failedEvent(turn.head, { code: codeOf(error), message }, sequence));
    },
    headers: { "x-request-id": turn.requestId },
  });
}
