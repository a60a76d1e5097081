/**
 * Streams one turn, as Anthropic SSE or as Chat Completions chunks: the head at once
 * (`message_start`, or the role chunk), keep-alives while the engine works (so a client's stall
 * watchdog never fires), then the content, or an error event if the turn fails after the stream
 * started. A client that disconnects aborts the turn.
 *
 * @module
 */
import {
  encodeSse,
  errorEvent,
  type Message,
  messageBodyEvents,
  messageStartEvent,
  PING_EVENT,
  type SseEvent,
} from "../lib/anthropic/mod.ts";
import { codeOf } from "../lib/errors/mod.ts";
import {
  bodyChunks,
  type ChatCompletion,
  DONE_EVENT,
  encodeData,
  KEEPALIVE_EVENT,
  openaiErrorBody,
  roleChunk,
  type StreamOptions,
} from "../lib/openai/mod.ts";
import { describeError } from "./_http.ts";

/** A settled promise's outcome. */
export type Settled<T> = { readonly value: T } | { readonly error: unknown };

/** The outcome of `promise` if it settles within `ms`, else `null` (the promise keeps running). */
export async function settleWithin<T>(promise: Promise<T>, ms: number): Promise<Settled<T> | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), ms));
  const outcome = promise.then((value) => ({ value }), (error) => ({ error }));
  try {
    return await Promise.race([outcome, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** What {@linkcode sseResponse} streams. */
export interface TurnStream {
  readonly requestId: string;
  /** The message as `message_start` announces it. */
  readonly head: Message;
  /** The turn, settling with the final message. */
  readonly done: Promise<Message>;
  /** Cancels the turn when the client goes away. */
  cancel(reason: unknown): void;
  /** True once the turn was cancelled: its failure then is the client's leaving, not an error. */
  readonly cancelled: () => boolean;
  readonly pingIntervalMs: number;
}

/** The streaming response of a turn. */
export function sseResponse(turn: TurnStream): Response {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (events: readonly SseEvent[]) => {
        if (closed) return;
        for (const event of events) controller.enqueue(encodeSse(event));
      };
      const finish = () => {
        clearInterval(timer);
        if (!closed) controller.close();
        closed = true;
      };
      send([messageStartEvent(turn.head)]);
      timer = setInterval(() => send([PING_EVENT]), turn.pingIntervalMs);
      turn.done.then(
        (message) => {
          send(messageBodyEvents(message));
          finish();
        },
        (error) => {
          if (!turn.cancelled()) {
            // An event has no status or headers: only the type and message reach the client.
            const { type, message } = describeError(error);
            send([errorEvent(type, message)]);
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
    },
  });
}

/** What {@linkcode chunkStreamResponse} streams. */
export interface ChunkStream {
  readonly requestId: string;
  /** Id, model and creation time every chunk carries. */
  readonly head: { readonly id: string; readonly model: string; readonly created: number };
  readonly options: StreamOptions;
  /**
   * Hold the role chunk back until the turn is done, so it can carry `prompt_token_ids`
   * (`return_token_ids`, the vLLM convention: prompt ids in the first chunk).
   */
  readonly promptIdsFirst: boolean;
  /** The turn, settling with the final completion. */
  readonly done: Promise<ChatCompletion>;
  cancel(reason: unknown): void;
  readonly cancelled: () => boolean;
  readonly pingIntervalMs: number;
}

/**
 * The streaming response of a Chat Completions turn: the role chunk at once (unless it waits
 * for the prompt ids), keep-alive comments while the engine works, the body chunks, and
 * `data: [DONE]`; or a `data: {"error": …}` event if the turn fails after the stream started
 * (the OpenAI SDKs raise it as an `APIError`). A client that disconnects aborts the turn.
 */
export function chunkStreamResponse(turn: ChunkStream): Response {
  let timer: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (...events: Uint8Array[]) => {
        if (closed) return;
        for (const event of events) controller.enqueue(event);
      };
      const finish = () => {
        clearInterval(timer);
        if (!closed) controller.close();
        closed = true;
      };
      if (!turn.promptIdsFirst) send(encodeData(roleChunk(turn.head, turn.options)));
      timer = setInterval(() => send(KEEPALIVE_EVENT), turn.pingIntervalMs);
      turn.done.then(
        (completion) => {
          if (turn.promptIdsFirst) {
            send(encodeData(roleChunk(turn.head, turn.options, completion.prompt_token_ids)));
          }
          send(...bodyChunks(completion, turn.options).map(encodeData), DONE_EVENT);
          finish();
        },
        (error) => {
          if (!turn.cancelled()) {
            const { type, message } = describeError(error);
            send(encodeData(openaiErrorBody(type, message, codeOf(error))));
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
      "x-request-id": turn.requestId,
    },
  });
}
