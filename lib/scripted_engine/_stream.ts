/**
 * How the engine delivers an answer: as a stream of `data:` chunks, or cut short mid-body when a
 * drop fault plays.
 *
 * @module
 */
import type { Output } from "./_output.ts";
import type { Run } from "./_run.ts";

/**
 * A stream chunk of output `from..` (`finish` null mid-stream) under `version`, in the engine's
 * dialect; `null` sends nothing.
 */
export type ChunkShape = (
  from: number,
  finish: Record<string, unknown> | null,
  version: string,
) => unknown | null;

/**
 * The streaming response of a call (sglang.md §1.4): a `data:` chunk per emission, cumulative
 * or incremental, the final chunk with the finish reason, then `data: [DONE]`. A drop fault, or
 * the engine dying, cuts the connection instead of finishing. `shape` makes a chunk (SGLang's by
 * default).
 */
export function streamed(
  out: Output,
  run: Run,
  finished: () => Promise<Record<string, unknown>>,
  answered: (finish: Record<string, unknown>) => void,
  version: () => string,
  options: {
    incremental: boolean;
    dropAfterMs: number | null;
    shape?: ChunkShape;
    /** Aborted when the engine dies: the connection is cut mid-stream. */
    life?: AbortSignal;
  },
): Response {
  const shape: ChunkShape = options.shape ?? ((from, finish, v) => out.chunk(from, finish, v));
  const encoder = new TextEncoder();
  let sent = 0;
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      /** Sends `text` unless the client is gone (its connection may close at any moment). */
      const write = (text: string) => {
        if (!open) return;
        try {
          controller.enqueue(encoder.encode(text));
        } catch {
          open = false;
        }
      };
      const send = (finish: Record<string, unknown> | null) => {
        if (!open) return;
        const chunk = shape(options.incremental ? sent : 0, finish, version());
        if (chunk !== null) write(`data: ${JSON.stringify(chunk)}\n\n`);
        sent = out.produced;
      };
      const end = () => {
        if (!open) return;
        open = false;
        try {
          controller.close();
        } catch {
          // the client is gone
        }
      };
      out.onEmit = () => send(null);
      if (options.dropAfterMs !== null) {
        // The body ends short of its announced length: the server closes the connection.
        setTimeout(() => {
          run.stop();
          end();
        }, options.dropAfterMs);
      }
      const die = () => {
        run.stop();
        if (!open) return;
        open = false;
        try {
          controller.error(new Error("the engine died"));
        } catch {
          // the client is gone
        }
      };
      if (options.life?.aborted) die();
      else options.life?.addEventListener("abort", die, { once: true });
      finished().then((finish) => {
        options.life?.removeEventListener("abort", die);
        if (options.dropAfterMs !== null || options.life?.aborted) return;
        send(finish);
        write("data: [DONE]\n\n");
        end();
        // A call whose client left is answered as a non-streamed one is: nobody reads it.
        answered(finish);
      });
    },
    cancel() {
      open = false;
      run.stop();
    },
  });
  const headers: Record<string, string> = { "content-type": "text/event-stream" };
  if (options.dropAfterMs !== null) headers["content-length"] = String(2 ** 30);
  return new Response(body, { headers });
}

/** A response whose body stops halfway through its announced length: the connection closes. */
export function cutShort(text: string): Response {
  const bytes = new TextEncoder().encode(text);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.slice(0, bytes.length >> 1));
      controller.close();
    },
  });
  return new Response(body, {
    headers: { "content-type": "application/json", "content-length": String(bytes.length) },
  });
}

/** Waits `ms`, or less if `signal` aborts. */
export function pauseFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
