/**
 * Whether an engine answers: its `GET /health` (SGLang's and vLLM's both answer 200 while they
 * serve; a draining or starting worker does not), the probe of gateway placement and of the
 * gateway's own readiness.
 *
 * @module
 */

/**
 * Whether `url`'s `/health` answers 200 before `signal` aborts.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { healthy } from "./health.ts";
 * const server = Deno.serve({ port: 0, onListen() {} }, () => new Response("ok"));
 * const url = `http://127.0.0.1:${server.addr.port}`;
 * assert.equal(await healthy(url, AbortSignal.timeout(5000)), true);
 * await server.shutdown();
 * ```
 * @throws when the engine cannot be reached or `signal` aborts first.
 */
export async function healthy(url: string, signal: AbortSignal): Promise<boolean> {
  const response = await fetch(`${url}/health`, { signal });
  await response.body?.cancel();
  return response.status === 200;
}

/** How an engine's readiness check went. */
export interface EngineReadiness {
  /** Some worker answers its `/health` with 200. */
  readonly ready: boolean;
  /** Per worker (one for a lone engine or a router): `ok`, or what went wrong, in words. */
  readonly workers: readonly string[];
}

/**
 * Asks every one of `urls` (a lone engine, a router, or the workers the gateway places on) for its
 * health at once, each within `timeoutMs`: ready when one answers 200, as generations can then be
 * served.
 */
export async function engineReadiness(
  urls: readonly string[],
  timeoutMs: number,
): Promise<EngineReadiness> {
  const workers = await Promise.all(urls.map(async (url) => {
    try {
      return await healthy(url, AbortSignal.timeout(timeoutMs))
        ? "ok"
        : `${url}/health did not answer 200`;
    } catch (error) {
      const timedOut = (error as Error).name === "TimeoutError";
      return timedOut
        ? `${url}/health did not answer within ${timeoutMs} ms`
        : `${url} cannot be reached`;
    }
  }));
  return { ready: workers.includes("ok"), workers };
}
