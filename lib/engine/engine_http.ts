/**
 * What every dialect's client does on the wire alike: a pool of connections to the engine, a
 * JSON request body written around the prompt's ids where they are kept, one call bounded by the
 * engine timeout and aborted with its caller (the engine told through `onAbort`), the engine's
 * answers and failures mapped to the gateway's two engine errors.
 *
 * @module
 */
import { EngineRejectedError, EngineUnavailableError } from "./engine.ts";
import {
  type EngineHttpWorker,
  type EngineTransport,
  isTransportTimeout,
  localTransport,
  type TransportBody,
} from "./http_worker.ts";
import type { RoutesAsk } from "./routes_reading.ts";
import { sseData, StreamFormatError } from "./stream_chunks.ts";

/** The message of an engine's error answer (`{error: {message}}`, `{message}`, or its text). */
export function engineErrorMessage(text: string): string {
  try {
    const body = JSON.parse(text);
    return String(body?.error?.message ?? body?.message ?? text).slice(0, 500);
  } catch {
    return text.slice(0, 500);
  }
}

/**
 * The JSON chunks of an engine's SSE answer, up to `[DONE]`, read to the body's end even when the
 * caller skips the rest (so the connection goes back to the pool).
 *
 * @throws {EngineRejectedError} for a chunk that reports the engine failing the request.
 */
export async function* engineChunks<T>(body: AsyncIterable<Uint8Array>): AsyncGenerator<T> {
  for await (const data of sseData(body)) {
    if (data === "[DONE]") continue;
    const chunk = JSON.parse(data);
    if (chunk?.error) {
      throw new EngineRejectedError(
        `Engine failed the request: ${String(chunk.error.message ?? "").slice(0, 500)}`,
      );
    }
    yield chunk as T;
  }
}

/** The connection was closed or reset under a request before any answer came. */
function closedBeforeAnswer(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === "UND_ERR_SOCKET" || code === "ECONNRESET";
}

/** The router's key header (`name: key`) of a request, when keys are sent and it has one. */
export function routingHeaders(
  send: boolean,
  name: string,
  key: string | undefined,
): Record<string, string> {
  return send && key !== undefined ? { [name]: key } : {};
}

/** What else a call to the engine says: how to refuse an error answer, headers, routed experts. */
export interface PostOptions {
  /** An error of the caller's own for an error answer, or `null` for the usual one. */
  readonly refuse?: (status: number, text: string) => Error | null;
  readonly headers?: Readonly<Record<string, string>>;
  readonly routes?: RoutesAsk;
}

/** One engine's HTTP side: its URL, its connection pool, its timeout. */
export class EngineHttp {
  readonly #transport: EngineTransport;

  /** Requests go through `worker` when given (the gateway's), else on this thread. */
  constructor(
    readonly url: string,
    readonly timeoutMs: number,
    connections: number,
    worker?: EngineHttpWorker,
  ) {
    const pool = { connections, timeoutMs };
    this.#transport = worker ? worker.connect(pool) : localTransport(pool);
  }

  /**
   * POSTs `parts` to `path` and gives the answer's body to `read`, within the timeout; when
   * `signal` aborts (the caller left) `onAbort` tells the engine and the caller's reason is
   * thrown. An error status is refused (4xx, unless `refuse` says otherwise) or unavailable
   * (5xx, 429); any other failure is the engine unreachable. `headers` go with the request (a
   * router's placement key); `routes` says which routed experts the answer carries, for the
   * transport to read where it reads the answer (`TransportBody.routes`).
   */
  async post<T>(
    path: string,
    parts: readonly [Uint8Array, Uint8Array, Uint8Array],
    signal: AbortSignal | undefined,
    onAbort: () => void,
    read: (body: TransportBody) => Promise<T>,
    options: PostOptions = {},
  ): Promise<T> {
    const { refuse, headers = {}, routes } = options;
    signal?.throwIfAborted();
    // The transport bounds the request by the timeout (the worker's own timer, off this thread).
    signal?.addEventListener("abort", onAbort, { once: true });
    const length = parts[0].length + parts[1].length + parts[2].length;
    const send = () =>
      this.#transport.request(`${this.url}${path}`, {
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(length),
        },
        body: parts,
        signal,
        ...(routes ? { routes } : {}),
      });
    try {
      // A kept-alive connection the engine closed (it restarted, or timed the connection out)
      // fails before any answer: the request goes once more on a new connection. Only an answer
      // read is ever recorded, so an engine that did take the first one forks nothing.
      const response = await send().catch((error) => {
        if (signal?.aborted || !closedBeforeAnswer(error)) throw error;
        return send();
      });
      if (response.statusCode >= 400) {
        const text = await response.body.text();
        const refused = refuse?.(response.statusCode, text);
        if (refused) throw refused;
        if (response.statusCode >= 500 || response.statusCode === 429) {
          throw new EngineUnavailableError(
            `Engine answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`,
          );
        }
        throw new EngineRejectedError(`Engine rejected the request: ${engineErrorMessage(text)}`);
      }
      return await read(response.body);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (isTransportTimeout(error)) {
        onAbort(); // the engine is told, as when the caller leaves
        throw new EngineUnavailableError(`Engine did not answer within ${this.timeoutMs} ms`);
      }
      if (error instanceof EngineRejectedError || error instanceof EngineUnavailableError) {
        throw error;
      }
      if (error instanceof StreamFormatError) throw new EngineRejectedError(error.message);
      throw new EngineUnavailableError(`Engine at ${this.url} is unreachable: ${String(error)}`, {
        cause: error,
      });
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** POSTs `body` to `path` within the timeout; the answer's status and text. */
  async ask(path: string, body: unknown): Promise<{ status: number; text: string }> {
    const response = await this.#transport.request(`${this.url}${path}`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: response.statusCode, text: await response.body.text() };
  }

  /** Best effort: POSTs `body` to `path`, its answer read and dropped, any failure ignored. */
  async tell(path: string, body: unknown): Promise<void> {
    try {
      const response = await this.#transport.request(`${this.url}${path}`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      await response.body.dump();
    } catch {
      // the engine may be gone; the dropped connection is the abort then
    }
  }

  /** Resolves once what the engine has sent so far has reached this thread. */
  delivered(): Promise<void> {
    return this.#transport.delivered();
  }

  async close(): Promise<void> {
    await this.#transport.close();
  }
}
