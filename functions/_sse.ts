/**
 * Streams one turn in its protocol's shape (`StreamShape`: the bytes each protocol writes, built
 * in its folder of `lib/`): the head at once, the content as the engine samples it, keep-alives
 * between (so a client's stall watchdog never fires), then the end of the reply, or the shape's
 * failure event if the turn fails after the stream started. A client that disconnects aborts the
 * turn. Nothing here knows a protocol.
 *
 * @module
 */
import type { OutputFeed, StreamShape } from "../lib/session/mod.ts";
import { codeOf } from "../lib/errors/mod.ts";
import type { GatewayMetrics } from "../lib/metrics/mod.ts";
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
export interface StreamedTurn<T> {
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

/**
 * The streaming response of a turn: the head, keep-alives, then the body or a failure event (the
 * error's answer, from `ERROR_TABLE`, in the shape's event); a client that disconnects cancels
 * the turn.
 */
export function streamResponse<T>(turn: StreamedTurn<T>, shape: StreamShape<T>): Response {
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
            send([shape.failure(describeError(error))]);
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
