/**
 * `deno task serve`: every function on one port, from the environment's configuration, in one
 * process or in `WORKERS` worker processes sharing the port and the KV file (`_workers.ts`).
 * Stops gracefully on SIGINT/SIGTERM: in-flight turns finish, then KV closes.
 *
 * @module
 */
import { Hono } from "hono";
import { type Config, configReport, formatConfigReport, resolveConfig } from "../lib/config/mod.ts";
import { banner, listeningOn } from "./_banner.ts";
import { buildDeps, type Deps } from "./_deps.ts";
import { atEdge } from "./_edge.ts";
import { errorOptions } from "./_http.ts";
import { createAgentsApp } from "./agents.ts";
import { createSessionsApp } from "./sessions.ts";
import { createEvaluateApp } from "./evaluate.ts";
import { createHealthApp } from "./health.ts";
import { createEngineApp } from "./engine.ts";
import { createMetricsApp } from "./metrics.ts";
import { createRolloutApp } from "./rollout.ts";
import { createTasksApp } from "./tasks.ts";
import { createUiApp } from "./ui.ts";
import { sweepExpiredSessions } from "../lib/session/mod.ts";
import { storeUnreachable, writeMetricsSnapshot } from "../lib/kv/mod.ts";
import { sweepExpiredRollouts } from "../lib/rollout/mod.ts";
import { runnersHere } from "../lib/evaluate/mod.ts";
import { METRICS_FRESH_MS, startPublishing, takeSnapshot } from "../lib/metrics/mod.ts";
import { ConfigError, logBackgroundFailure } from "../lib/errors/mod.ts";
import { TRIM_EVERY_MS, trimEvery } from "../lib/cache/mod.ts";
import { stopWhenOrphaned, supervise, workerIndex } from "./_workers.ts";

/** How often expired sessions are looked for. */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * All functions mounted on one app, served from the edge (`_edge.ts`). A worker of several names
 * itself on every response (`x-gateway-worker`), and a host on a shared store names its host
 * (`x-gateway-host`, its `HOST_ID`), so an operator can tell which process served what.
 */
export function createGatewayApp(deps: Deps, worker: number | null = null): Hono {
  const app = new Hono();
  const host = deps.config.storeUrl === null ? null : deps.config.hostId;
  if (worker !== null || host !== null) {
    app.use(async (c, next) => {
      await next();
      if (worker !== null) c.res.headers.set("x-gateway-worker", String(worker));
      if (host !== null) c.res.headers.set("x-gateway-host", host);
    });
  }
  app.route("/", createHealthApp(deps));
  app.route("/", createAgentsApp(deps));
  app.route("/", createSessionsApp(deps));
  app.route("/", createEvaluateApp(deps));
  app.route("/", createRolloutApp(deps));
  app.route("/", createTasksApp(deps));
  app.route("/", createEngineApp(deps));
  app.route("/", createMetricsApp(deps, worker ?? 0));
  app.route("/", createUiApp(deps));
  return atEdge(app, errorOptions(deps));
}

/** What `--help` prints. */
export const USAGE = `Rollout Gateway: records every agent episode token for token.

Usage:
  deno task serve              run the gateway (every setting from the environment)
  deno task serve --config     print the configuration in force, secrets masked, and exit
  deno task serve --help       print this and exit
  deno task config             the same as --config

Settings are environment variables (docs/configuration.md lists each, with its default). Those a
first run sets most: PORT (8080), HOST (127.0.0.1; 0.0.0.0 listens on every interface),
ENGINE_URL (unset: the built-in scripted engine), ADMIN_TOKEN (unset: generated and printed),
KV_PATH (./data/gateway.kv), STORE_URL (a PostgreSQL store shared by many hosts).

Health: GET /health (the process answers) and GET /health/ready (the store and the engine answer).
`;

async function main(): Promise<void> {
  if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log(USAGE);
    return;
  }
  if (Deno.args.includes("--config")) {
    Deno.exit(printConfig(Deno.env.toObject()));
  }
  let config: Config;
  try {
    config = resolveConfig(Deno.env.toObject());
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Cannot start: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
  const worker = workerIndex(Deno.args);
  if (worker === null && config.workers > 1) Deno.exit(await supervise(config));
  await serveWorker(config, worker);
}

/**
 * Prints the configuration `env` sets, variable by variable, then whether it is valid; the exit
 * status: 0 when it is, 1 when it is not.
 */
export function printConfig(env: Record<string, string | undefined>): number {
  console.log(formatConfigReport(configReport(env)));
  try {
    resolveConfig(env);
    console.log("The configuration is valid.");
    return 0;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.log(`The configuration is not valid: ${error.message}`);
    return 1;
  }
}

/**
 * Keeps the process up when the PostgreSQL driver rejects a promise nothing awaits because its
 * database went away (a connection refused or cut while it restarts): that is the store's
 * weather, answered meanwhile with 503s, not a bug. Any other unhandled rejection stops the
 * process as ever (a supervisor starts it again).
 */
function outliveTheStore(): void {
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (!storeUnreachable(event.reason)) return;
    event.preventDefault();
    console.warn(`The store's connection failed (${(event.reason as Error).message}); retrying`);
  });
}

/** Serves every function in this process: the only one, or worker `index` of a supervisor's. */
async function serveWorker(config: Config, index: number | null): Promise<void> {
  if (config.storeUrl !== null) outliveTheStore();
  let deps: Deps;
  try {
    deps = await buildDeps(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Cannot start: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
  const app = createGatewayApp(deps, index);
  // What a local sandbox can grade with, said at start-up (worker 0 and a lone process say it).
  const runners = index === null || index === 0 ? await runnersHere() : null;
  const server = Deno.serve({
    hostname: config.host,
    port: config.port,
    // Workers share the supervisor's port; the kernel spreads connections across them.
    reusePort: index !== null,
    onListen: ({ hostname, port }) => {
      const { url, words } = listeningOn(hostname, port);
      deps.setListening(url);
      if (index === null) {
        console.log(banner(deps, url, `Rollout Gateway listening on ${words}`, runners));
        return;
      }
      // The supervisor waits for this line (WORKER_READY); worker 0 adds the details.
      const ready = `Worker ${index} (pid ${Deno.pid}) ready on ${words}`;
      console.log(index === 0 ? banner(deps, url, ready, runners) : ready);
    },
  }, app.fetch);
  if (config.rollout.worker) deps.rollout.start();
  // Freed memory back to the system now and then (lib/cache/freed_memory.ts).
  const trimming = deps.trimFreedMemory && trimEvery(deps.trimFreedMemory, TRIM_EVERY_MS);
  // The tokenizer workers load while the first connections arrive.
  deps.encoder.warm().catch((error) => console.error(`Tokenizer workers: ${error.message}`));
  // Deletes closed sessions and finished rollout jobs past their retention; any process may
  // run it (it is idempotent), one worker of a supervisor's does.
  const sweeper = index !== null && index > 0 ? undefined : setInterval(() => {
    sweepExpiredSessions(deps.kv).catch((error) => logBackgroundFailure("Sweep", error));
    sweepExpiredRollouts(deps.kv).catch((error) => logBackgroundFailure("Rollout sweep", error));
  }, SWEEP_INTERVAL_MS);
  // A worker of several publishes its metrics, for whichever worker serves a scrape to show; so
  // does a lone process on a store other hosts share.
  const publishing = index === null && config.storeUrl === null ? null : startPublishing(() => {
    deps.sampleMemory();
    return writeMetricsSnapshot(
      deps.kv,
      deps.config.hostId,
      index ?? 0,
      takeSnapshot(deps.metrics.registry),
      METRICS_FRESH_MS,
    );
  });
  let stopping: Promise<void> | null = null;
  const stop = () =>
    stopping ??= (async () => {
      clearInterval(sweeper);
      trimming?.();
      // Running rollouts first: their agents are in-flight requests that would never end.
      console.log("Shutting down: handing running rollouts back, then waiting for requests");
      await deps.rollout.stop();
      await server.shutdown();
      await publishing?.stop();
      await deps.close();
      Deno.exit(0);
    })();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  if (index !== null) stopWhenOrphaned(stop);
  await server.finished;
}

if (import.meta.main) await main();
