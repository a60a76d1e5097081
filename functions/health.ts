/**
 * `GET /health` and `GET /health/ready`, for load balancers and orchestrators, without a token:
 * liveness (the process answers; nothing else is asked) and readiness (the store answers a read,
 * and the engine, or one of the workers the gateway places on, answers its `/health`). Neither says
 * more than what is up: no address, no secret.
 *
 * Served alone with `deno serve -A functions/health.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { engineReadiness } from "../lib/engine/mod.ts";
import { keys } from "../lib/kv/mod.ts";
import { type Deps, lazyApp } from "./_deps.ts";
import { errorOptions, errorResponse, newRequestId } from "./_http.ts";

/** Longest each readiness check may take. */
export const READY_TIMEOUT_MS = 2_000;

/** What the health app uses. */
export type HealthAppDeps = Pick<Deps, "kv" | "config" | "engine" | "metrics" | "scripted">;

/** The health app over `deps`. */
export function createHealthApp(deps: HealthAppDeps): Hono {
  const app = new Hono();
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.get("/health/ready", async (c) => {
    const [store, engine] = await Promise.all([storeCheck(deps), engineCheck(deps)]);
    const ready = store === "ok" && engine === "ok";
    return c.json({ status: ready ? "ready" : "not_ready", store, engine }, ready ? 200 : 503);
  });
  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

/** `ok` when the store answers a read in time, else why not (without its address). */
async function storeCheck(deps: HealthAppDeps): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(
      () => resolve(`the store did not answer within ${READY_TIMEOUT_MS} ms`),
      READY_TIMEOUT_MS,
    );
  });
  const read = deps.kv.get(keys.healthProbe()).then(
    () => "ok",
    () => "the store did not answer a read",
  );
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** `ok` when the engine (a worker of it, placed by the gateway) answers its `/health`. */
async function engineCheck(deps: HealthAppDeps): Promise<string> {
  const urls = deps.config.enginePlacement === "gateway"
    ? deps.config.engineWorkers ?? []
    : [deps.engine.url];
  const { ready, workers } = await engineReadiness(urls, READY_TIMEOUT_MS);
  if (ready) return "ok";
  // Which worker said what, by position: the addresses stay on the operator's side.
  return urls.length === 1
    ? `the engine: ${words(workers[0], urls[0])}`
    : `no engine worker is ready (${
      workers.map((said, i) => `worker ${i}: ${words(said, urls[i])}`).join("; ")
    })`;
}

/** `said` without the URL it names. */
function words(said: string, url: string): string {
  return said.replaceAll(`${url}/health`, "/health").replaceAll(url, "it");
}

export default lazyApp(createHealthApp);
