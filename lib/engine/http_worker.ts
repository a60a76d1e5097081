/**
 * Where an engine client's HTTP requests are made: on the calling thread (undici's pool), or on
 * the engine HTTP worker (`_http_worker.ts`, undici's pools on a thread of their own), which the
 * gateway uses so the request's event loop spends one message each way on an engine call instead
 * of undici's work on it: writing a prompt's ids (1.5 MB at 256k tokens), parsing the answer's
 * HTTP, its stream's pieces (docs/DESIGN.md §7).
 *
 * @module
 */
import { Agent, request } from "undici";
import { requestBody, transportTimeout } from "./_request_body.ts";
export { isTransportTimeout, TIMEOUT_CODE } from "./_request_body.ts";
import type { HttpWorkerMessage, HttpWorkerReply } from "./_http_worker.ts";
import { type DecodedRoutes, markerIndex, type RoutesAsk } from "./routes_reading.ts";
import { StreamFormatError } from "./stream_chunks.ts";

/** An answer's body: its pieces as they come, or all of it. */
export interface TransportBody extends AsyncIterable<Uint8Array> {
  /** The whole body as text. */
  text(): Promise<string>;
  /** Reads the body to its end, dropping it. */
  dump(): Promise<void>;
  /**
   * The routed experts a marker in the body's text names (read on the worker, when the request
   * asked it to: `TransportRequest.routes`), once the worker has decoded them (they follow the
   * text); `undefined` for any other value.
   */
  routes?(value: unknown): Promise<DecodedRoutes> | undefined;
}

/** An engine's answer: its status, then its body. */
export interface TransportResponse {
  readonly statusCode: number;
  readonly body: TransportBody;
}

/** A POST to the engine. */
export interface TransportRequest {
  readonly headers: Readonly<Record<string, string>>;
  /** JSON text, or its bytes in parts (the middle one a prompt's ids, where they are kept). */
  readonly body: string | readonly Uint8Array[];
  readonly signal?: AbortSignal;
  /** The routed experts the answer carries, to read where it is read (the worker; `routes_reading.ts`). */
  readonly routes?: RoutesAsk;
}

/** How one engine client makes its requests: a pool of connections to its engine. */
export interface EngineTransport {
  request(url: string, init: TransportRequest): Promise<TransportResponse>;
  /**
   * Resolves once what the engine has sent so far has reached this thread (the worker passes
   * answers on a message later; on the caller's thread there is nothing to wait for).
   */
  delivered(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The pool's size, and the longest one request may take, its body's reading included: past it
 * the request is dropped and fails with an error coded {@linkcode TIMEOUT_CODE}.
 */
export interface PoolOptions {
  readonly connections: number;
  readonly timeoutMs: number;
}

/**
 * `body`, with `done` called once it is read to its end, or its reading fails or stops; a failure
 * is `failure(error)`'s (the timeout's own error once it has passed).
 */
function finishing(
  body: TransportBody,
  done: () => void,
  failure: (error: unknown) => unknown,
): TransportBody {
  const settle = <T>(reading: Promise<T>) =>
    reading.catch((error) => {
      throw failure(error);
    }).finally(done);
  return {
    async *[Symbol.asyncIterator]() {
      try {
        yield* body;
      } catch (error) {
        throw failure(error);
      } finally {
        done();
      }
    },
    text: () => settle(body.text()),
    dump: () => settle(body.dump()),
  };
}

/** Requests made on the calling thread, by undici. */
export function localTransport(options: PoolOptions): EngineTransport {
  const agent = new Agent({
    connections: options.connections,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });
  return {
    async request(url, init) {
      // One timer a request, cleared when it ends (`AbortSignal.timeout` would keep each pending
      // for the whole timeout).
      const deadline = new AbortController();
      const timeout = transportTimeout(options.timeoutMs);
      const timer = setTimeout(() => deadline.abort(timeout), options.timeoutMs);
      const failure = (error: unknown) => deadline.signal.reason === timeout ? timeout : error;
      const forward = () => deadline.abort(init.signal!.reason);
      init.signal?.addEventListener("abort", forward, { once: true });
      if (init.signal?.aborted) forward();
      const done = () => {
        clearTimeout(timer);
        init.signal?.removeEventListener("abort", forward);
      };
      try {
        const response = await request(url, {
          method: "POST",
          headers: init.headers,
          body: typeof init.body === "string" ? init.body : requestBody(init.body),
          dispatcher: agent,
          signal: deadline.signal,
        });
        return { statusCode: response.statusCode, body: finishing(response.body, done, failure) };
      } catch (error) {
        done();
        throw failure(error);
      }
    },
    delivered: () => Promise.resolve(),
    close: () => agent.close(),
  };
}

/** An error the worker reported, as undici threw it there: its name, message and code. */
function workerError(reply: Extract<HttpWorkerReply, { type: "error" }>): Error {
  // The stream's format, as the client's reader would have refused it on the worker's behalf.
  if (reply.name === "StreamFormatError") return new StreamFormatError(reply.message);
  const error = new Error(reply.message) as Error & { code?: string };
  error.name = reply.name;
  if (reply.code !== undefined) error.code = reply.code;
  return error;
}

/** A body arriving from the worker in pieces. */
class WorkerBody implements TransportBody {
  readonly #pieces: Uint8Array[] = [];
  #ended = false;
  #failure: unknown = null;
  #wake: (() => void) | null = null;
  /** The reader stopped early: pieces still coming are dropped. */
  #dropping = false;
  /** Rows the worker decodes, by the nonce of the text they were taken from: they follow it. */
  readonly #routes = new Map<string, PromiseWithResolvers<readonly DecodedRoutes[]>>();

  /** A piece; `routes`, the nonce of its markers, whose rows {@linkcode decoded} will give. */
  push(bytes: Uint8Array, routes?: string): void {
    if (!this.#dropping) this.#pieces.push(bytes);
    if (routes !== undefined && !this.#dropping) {
      const coming = Promise.withResolvers<readonly DecodedRoutes[]>();
      coming.promise.catch(() => {}); // a reader that never asks for them is told nothing
      this.#routes.set(routes, coming);
    }
    this.#notify();
  }

  /** The rows of the markers of `nonce`, decoded. */
  decoded(nonce: string, decoded: readonly DecodedRoutes[]): void {
    this.#routes.get(nonce)?.resolve(decoded);
  }

  routes(value: unknown): Promise<DecodedRoutes> | undefined {
    const nonce = (value as { nonce?: unknown } | null)?.nonce;
    if (typeof nonce !== "string") return undefined;
    const k = markerIndex(value, nonce);
    const coming = k === null ? undefined : this.#routes.get(nonce);
    return coming?.promise.then((decoded) =>
      decoded[k!] ?? { error: `The engine HTTP worker sent no rows for marker ${k}` }
    );
  }

  end(): void {
    this.#ended = true;
    this.#notify();
  }

  /** Fails the reading, and the rows not yet decoded. */
  fail(error: unknown): void {
    this.#failure ??= error;
    this.#ended = true;
    for (const coming of this.#routes.values()) coming.reject(error);
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    try {
      while (true) {
        if (this.#pieces.length > 0) {
          yield this.#pieces.shift()!;
          continue;
        }
        if (this.#failure !== null) throw this.#failure;
        if (this.#ended) return;
        await new Promise<void>((resolve) => this.#wake = resolve);
      }
    } finally {
      this.#dropping = true;
      this.#pieces.length = 0;
    }
  }

  async text(): Promise<string> {
    // A character may be split between pieces: the decoder carries it over.
    const decoder = new TextDecoder();
    let text = "";
    for await (const piece of this) text += decoder.decode(piece, { stream: true });
    return text + decoder.decode();
  }

  async dump(): Promise<void> {
    for await (const _ of this);
  }
}

/** A request sent to the worker and not finished. */
interface Pending {
  readonly head: PromiseWithResolvers<TransportResponse>;
  body: WorkerBody | null;
  /** A whole answer whose rows are still to come: they finish it. */
  whole: boolean;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * The engine HTTP worker: one thread, started on the first request, holding every engine
 * client's connection pool that uses it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EngineHttpWorker } from "./http_worker.ts";
 * const server = Deno.serve({ port: 0, onListen() {} }, async (req) => new Response(await req.text()));
 * const worker = new EngineHttpWorker();
 * const pool = worker.connect({ connections: 4, timeoutMs: 10_000 });
 * const answer = await pool.request(`http://127.0.0.1:${server.addr.port}/`, {
 *   headers: {},
 *   body: [new TextEncoder().encode("hello")],
 * });
 * assert.equal(answer.statusCode, 200);
 * assert.equal(await answer.body.text(), "hello");
 * await pool.close();
 * await worker.close();
 * await server.shutdown();
 * ```
 */
export class EngineHttpWorker {
  #worker: Worker | null = null;
  readonly #pending = new Map<number, Pending>();
  readonly #closing = new Map<number, () => void>();
  readonly #barriers = new Map<number, () => void>();
  /** Pools by id, with their options, to make again on a new thread. */
  readonly #pools = new Map<number, PoolOptions>();
  #nextId = 0;
  #nextAgent = 0;

  /** A pool of connections on the worker, for one engine client. */
  connect(options: PoolOptions): EngineTransport {
    const agent = this.#nextAgent++;
    this.#pools.set(agent, options);
    if (this.#worker) this.#post(poolMessage(agent, options));
    return {
      request: (url, init) => this.#request(agent, url, init),
      delivered: () => this.#barrier(),
      close: () => this.#closePool(agent),
    };
  }

  /** Stops the thread; requests under way fail. */
  async close(): Promise<void> {
    this.#stop(new Error("The engine HTTP worker was closed"));
    await Promise.resolve();
  }

  #request(agent: number, url: string, init: TransportRequest): Promise<TransportResponse> {
    const { signal } = init;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this.#nextId++;
    const head = Promise.withResolvers<TransportResponse>();
    const onAbort = () => {
      const pending = this.#pending.get(id);
      if (!pending) return;
      this.#finish(id);
      this.#post({ type: "abort", id });
      const reason = signal!.reason;
      if (pending.body) pending.body.fail(reason);
      else head.reject(reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    this.#pending.set(id, { head, body: null, whole: false, signal, onAbort });
    // The prompt's digits are in shared memory (`PromptIds`): they reach the worker uncopied.
    this.#post({
      type: "request",
      id,
      agent,
      url,
      headers: init.headers,
      body: init.body,
      ...(init.routes ? { routes: init.routes } : {}),
    });
    return head.promise;
  }

  /** Resolves once the worker has posted every answer piece it had read when asked. */
  #barrier(): Promise<void> {
    if (!this.#worker) return Promise.resolve();
    const id = this.#nextId++;
    const passed = Promise.withResolvers<void>();
    this.#barriers.set(id, passed.resolve);
    this.#post({ type: "barrier", id });
    return passed.promise;
  }

  #closePool(agent: number): Promise<void> {
    this.#pools.delete(agent);
    if (!this.#worker) return Promise.resolve();
    const closed = Promise.withResolvers<void>();
    this.#closing.set(agent, closed.resolve);
    this.#post({ type: "close", agent });
    return closed.promise;
  }

  /** Sends `message`, starting the thread (and making its pools) first if none runs. */
  #post(message: HttpWorkerMessage): void {
    if (!this.#worker) {
      const worker = new Worker(new URL("./_http_worker.ts", import.meta.url).href, {
        type: "module",
      });
      worker.onmessage = (event: MessageEvent<HttpWorkerReply>) => this.#answer(event.data);
      worker.onerror = (event: ErrorEvent) => {
        event.preventDefault();
        this.#stop(new Error(`The engine HTTP worker stopped: ${event.message}`));
      };
      this.#worker = worker;
      for (const [agent, options] of this.#pools) worker.postMessage(poolMessage(agent, options));
    }
    this.#worker.postMessage(message);
  }

  #answer(reply: HttpWorkerReply): void {
    if (reply.type === "closed") {
      this.#closing.get(reply.agent)?.();
      this.#closing.delete(reply.agent);
      return;
    }
    if (reply.type === "barrier") {
      this.#barriers.get(reply.id)?.();
      this.#barriers.delete(reply.id);
      return;
    }
    const pending = this.#pending.get(reply.id);
    if (!pending) return; // aborted: its late pieces are dropped
    switch (reply.type) {
      case "head":
        pending.body = new WorkerBody();
        pending.head.resolve({ statusCode: reply.status, body: pending.body });
        return;
      case "whole": {
        const body = new WorkerBody();
        body.push(reply.bytes, reply.routes);
        body.end();
        // Its rows follow: it is finished (or aborted, or failed) with them.
        if (reply.routes === undefined) this.#finish(reply.id);
        else {
          pending.body = body;
          pending.whole = true;
        }
        pending.head.resolve({ statusCode: reply.status, body });
        return;
      }
      case "data":
        pending.body?.push(reply.bytes, reply.routes);
        return;
      case "routes":
        pending.body?.decoded(reply.nonce, reply.decoded);
        if (pending.whole) this.#finish(reply.id);
        return;
      case "end":
        this.#finish(reply.id);
        pending.body?.end();
        return;
      case "error": {
        this.#finish(reply.id);
        const error = workerError(reply);
        if (pending.body) pending.body.fail(error);
        else pending.head.reject(error);
        return;
      }
    }
  }

  /** Forgets request `id` (answered, failed or aborted). */
  #finish(id: number): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    pending.signal?.removeEventListener("abort", pending.onAbort);
  }

  /** Ends the thread: its requests fail with `error`; the next request starts another. */
  #stop(error: Error): void {
    this.#worker?.terminate();
    this.#worker = null;
    for (const [id, pending] of [...this.#pending]) {
      this.#finish(id);
      if (pending.body) pending.body.fail(error);
      else pending.head.reject(error);
    }
    for (const resolve of [...this.#closing.values(), ...this.#barriers.values()]) resolve();
    this.#closing.clear();
    this.#barriers.clear();
  }
}

function poolMessage(agent: number, options: PoolOptions): HttpWorkerMessage {
  return {
    type: "agent",
    agent,
    connections: options.connections,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  };
}
