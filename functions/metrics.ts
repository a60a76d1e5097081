/**
 * `GET /metrics` (admin token): the gateway's metrics in Prometheus text format 0.0.4. The
 * worker serving the scrape shows its own registry live and every other worker's latest snapshot
 * from the store, its host's and other hosts', each series labelled `host="<id>",worker="<i>"`
 * (sum across them in PromQL); the rollout groups' tool turns are read from the store and carry
 * neither label.
 *
 * Served alone with `deno serve -A functions/metrics.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { readMetricsSnapshots } from "../lib/kv/mod.ts";
import {
  EXPOSITION_CONTENT_TYPE,
  renderExposition,
  workerFamilies,
  workersToShow,
} from "../lib/metrics/mod.ts";
import { groupToolTurnsFamily } from "../lib/rollout/mod.ts";
import { admin } from "./_admin.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import { errorOptions, errorResponse, newRequestId } from "./_http.ts";

/** The metrics app over `deps`, in worker `worker` (0 when the process serves alone). */
export function createMetricsApp(
  deps: AdminDeps & Partial<Pick<Deps, "sampleMemory">>,
  worker = 0,
): Hono {
  const app = new Hono();
  app.use("/metrics", admin(deps));

  app.get("/metrics", async (c) => {
    deps.sampleMemory?.();
    const registry = deps.metrics.registry;
    const self = { host: deps.config.hostId, worker };
    const workers = workersToShow(registry, self, await readMetricsSnapshots(deps.kv));
    const families = [...workerFamilies(registry, workers), await groupToolTurnsFamily(deps.kv)];
    return c.body(renderExposition(families), 200, { "content-type": EXPOSITION_CONTENT_TYPE });
  });

  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

export default lazyApp((deps) => createMetricsApp(deps));
