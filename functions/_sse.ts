/**
 * Streams one turn as Anthropic SSE: `message_start` at once, `ping` while the engine works
 * (so a client's stall watchdog never fires), then the content events, or an `error` event if
 * the turn fails after the stream started. A client that disconnects aborts the turn.
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
