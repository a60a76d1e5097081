/**
 * The engine HTTP worker (`http_worker.ts`): undici's connection pools and every request to the
 * engine live on this thread, so writing a prompt's ids and reading the answer cost the gateway's
 * event loop one message each way.
 *
 * The protocol, each message a `type` and an `id` (a request's) or an `agent` (a pool's):
 * `agent` makes a pool; `request` sends one, answered `whole` (status and body, for any answer but
 * an event stream) or `head` (its status), `data` (each piece of the stream, its buffer
 * transferred), then `end` — or `error` (name, message and code of undici's error) at any point;
 * `abort` drops one; `close` closes a pool, answered `closed`; `barrier` is answered once what the
 * pools had read has been posted.
 *
 * A request that asks for routed experts (`routes`) has them read here (`routes_reading.ts`): its
 * answer, or each event of its stream (then sent an event a piece, as `data:` lines), comes with
 * its routes strings replaced by markers of a nonce (`routes`), and the rows they held follow in
 * a message of their own (`routes`: that nonce and the decoded rows, their buffers transferred),
 * so the gateway reads the answer while they are decoded.
 *
 * @module
 */
import { Agent, request } from "undici";
import { requestBody, TIMEOUT_CODE, transportTimeout } from "./_request_body.ts";
import {
  type DecodedRoutes,
  decodeMarked,
  type MarkedRoutes,
  markRoutes as markedRoutes,
  type RoutesAsk,
} from "./routes_reading.ts";
import { sseEvents, SseEventTooLongError } from "./sse_data.ts";

/** A message from the gateway's thread. */
export type HttpWorkerMessage =
  | {
    readonly type: "agent";
    readonly agent: number;
    readonly connections: number;
    readonly headersTimeout: number;
    readonly bodyTimeout: number;
  }
  | {
    readonly type: "request";
    readonly id: number;
    readonly agent: number;
    readonly url: string;
    readonly headers: Readonly<Record<string, string>>;
    /** JSON text, or its bytes in parts (the prompt's digits in shared memory). */
    readonly body: string | readonly Uint8Array[];
    /** The routed experts to read from the answer, for the model and dialect named. */
    readonly routes?: RoutesAsk;
  }
  | { readonly type: "abort"; readonly id: number }
  | { readonly type: "close"; readonly agent: number }
  | { readonly type: "barrier"; readonly id: number };

/** A message to the gateway's thread. */
export type HttpWorkerReply =
  | { readonly type: "head"; readonly id: number; readonly status: number }
  | {
    readonly type: "whole";
    readonly id: number;
    readonly status: number;
    readonly bytes: Uint8Array;
    /** The nonce of the markers in `bytes`: their rows follow (a `routes` message). */
    readonly routes?: string;
  }
  | {
    readonly type: "data";
    readonly id: number;
    readonly bytes: Uint8Array;
    /** As for `whole`. */
    readonly routes?: string;
  }
  | {
    readonly type: "routes";
    readonly id: number;
    readonly nonce: string;
    /** The rows of the k-th marker of `nonce`, at k. */
    readonly decoded: readonly DecodedRoutes[];
  }
  | { readonly type: "end"; readonly id: number }
  | {
    readonly type: "error";
    readonly id: number;
    readonly name: string;
    readonly message: string;
    readonly code?: string;
  }
  | { readonly type: "closed"; readonly agent: number }
  | { readonly type: "barrier"; readonly id: number };

/** This worker's scope, as a worker sees it (the type checker knows only a window's). */
const scope = self as unknown as {
  postMessage(message: HttpWorkerReply, transfer?: Transferable[]): void;
  onmessage: (event: MessageEvent<HttpWorkerMessage>) => void;
};

const agents = new Map<number, { readonly agent: Agent; readonly timeoutMs: number }>();
/** Requests under way, by id: how to drop each. */
const running = new Map<number, AbortController>();

scope.onmessage = (event) => {
  const message = event.data;
  switch (message.type) {
    case "agent":
      agents.set(message.agent, {
        agent: new Agent({
          connections: message.connections,
          headersTimeout: message.headersTimeout,
          bodyTimeout: message.bodyTimeout,
        }),
        timeoutMs: message.headersTimeout,
      });
      return;
    case "request":
      void send(message);
      return;
    case "abort":
      running.get(message.id)?.abort();
      return;
    case "barrier":
      // Two turns of this thread's event loop: answer pieces already readable are read, and
      // posted, before the barrier's answer.
      setTimeout(() => setTimeout(() => scope.postMessage({ type: "barrier", id: message.id })));
      return;
    case "close": {
      const pool = agents.get(message.agent);
      agents.delete(message.agent);
      void (pool?.agent.close() ?? Promise.resolve()).finally(() =>
        scope.postMessage({ type: "closed", agent: message.agent })
      );
      return;
    }
  }
};

async function send(message: Extract<HttpWorkerMessage, { type: "request" }>): Promise<void> {
  const { id } = message;
  const abort = new AbortController();
  running.set(id, abort);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const pool = agents.get(message.agent);
    if (!pool) throw new Error(`No connection pool ${message.agent}`);
    // The pool's timeout bounds the whole request, its body's reading included.
    const timeout = transportTimeout(pool.timeoutMs);
    timer = setTimeout(() => abort.abort(timeout), pool.timeoutMs);
    const response = await request(message.url, {
      method: "POST",
      headers: message.headers,
      body: typeof message.body === "string" ? message.body : requestBody(message.body),
      dispatcher: pool.agent,
      signal: abort.signal,
    });
    if (!String(response.headers["content-type"] ?? "").includes("text/event-stream")) {
      // Not a stream (a JSON answer, an error): read whole here, sent in one message.
      const read = new Uint8Array(await response.body.arrayBuffer());
      const marked = message.routes && response.statusCode < 400
        ? markRoutes(new TextDecoder().decode(read), message.routes, crypto.randomUUID())
        : null;
      const bytes = marked ? encoder.encode(marked.text) : read;
      scope.postMessage(
        {
          type: "whole",
          id,
          status: response.statusCode,
          bytes,
          ...(marked ? { routes: marked.nonce } : {}),
        },
        [bytes.buffer],
      );
      if (marked) postRoutes(id, marked, message.routes!);
      return;
    }
    scope.postMessage({ type: "head", id, status: response.statusCode });
    if (message.routes) {
      await sendEvents(id, response.body, message.routes);
      scope.postMessage({ type: "end", id });
      return;
    }
    for await (const chunk of response.body) {
      // A piece may be a view of a pooled buffer: copied, then handed over whole.
      const bytes = new Uint8Array(chunk as Uint8Array);
      scope.postMessage({ type: "data", id, bytes }, [bytes.buffer]);
    }
    scope.postMessage({ type: "end", id });
  } catch (thrown) {
    // Past the timeout, its own error, whatever undici threw for the abort.
    const error = abort.signal.reason?.code === TIMEOUT_CODE ? abort.signal.reason : thrown;
    const { name, message: text, code } = error as {
      name: string;
      message: string;
      code?: unknown;
    };
    scope.postMessage({
      type: "error",
      id,
      name: String(name),
      message: String(text),
      ...(typeof code === "string" ? { code } : {}),
    });
  } finally {
    clearTimeout(timer);
    running.delete(id);
  }
}

/** A text's routes strings, marked by `nonce`. */
interface Marked extends MarkedRoutes {
  readonly nonce: string;
}

/** `text` with its routes strings marked; `null` when it holds none to take. */
function markRoutes(text: string, ask: RoutesAsk, nonce: string): Marked | null {
  const marked = markedRoutes(text, ask, nonce);
  return marked && { ...marked, nonce };
}

/** The rows of `marked`'s strings, decoded, sent after its text. */
function postRoutes(id: number, marked: Marked, ask: RoutesAsk): void {
  const decoded = decodeMarked(marked, ask);
  scope.postMessage(
    { type: "routes", id, nonce: marked.nonce, decoded },
    decoded.flatMap((rows) => "values" in rows ? [rows.values.buffer as ArrayBuffer] : []),
  );
}

/**
 * A stream's events, each sent as its `data:` lines (what the client reads of an event: its data;
 * comments and other fields it reads past), with its routes taken out.
 */
async function sendEvents(
  id: number,
  body: AsyncIterable<Uint8Array>,
  ask: RoutesAsk,
): Promise<void> {
  try {
    for await (const data of sseEvents(body)) {
      const marked = markRoutes(data, ask, crypto.randomUUID());
      const text = marked?.text ?? data;
      const bytes = encoder.encode(`data: ${text.replaceAll("\n", "\ndata: ")}\n\n`);
      scope.postMessage({ type: "data", id, bytes, ...(marked ? { routes: marked.nonce } : {}) }, [
        bytes.buffer,
      ]);
      if (marked) postRoutes(id, marked, ask);
    }
  } catch (error) {
    // The client's reader would have refused the event as its stream's format (`sseData`).
    if (error instanceof SseEventTooLongError) {
      throw Object.assign(new Error(error.message), { name: "StreamFormatError" });
    }
    throw error;
  }
}

const encoder = new TextEncoder();
