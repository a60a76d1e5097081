/**
 * `deno task serve`: every function on one port, from the environment's configuration.
 * Stops gracefully on SIGINT/SIGTERM: in-flight turns finish, then KV closes.
 *
 * @module
 */
import { Hono } from "hono";
import { ConfigError, resolveConfig } from "../lib/config/mod.ts";
import { banner, buildDeps, type Deps } from "./_deps.ts";
import { errorResponse, newRequestId, RouteNotFoundError } from "./_http.ts";
import { createAgentsApp } from "./agents.ts";
import { createSessionsApp } from "./sessions.ts";
import { createEvaluateApp } from "./evaluate.ts";
import { createRolloutApp } from "./rollout.ts";
import { sweepExpiredSessions } from "../lib/session/mod.ts";
import { sweepExpiredRollouts } from "../lib/kv/mod.ts";

/** How often expired sessions are looked for. */
const SWEEP_INTERVAL_MS = 60_000;

/** All functions mounted on one app. */
export function createGatewayApp(deps: Deps): Hono {
  const app = new Hono();
  app.route("/", createAgentsApp(deps));
  app.route("/", createSessionsApp(deps));
  app.route("/", createEvaluateApp(deps));
  app.route("/", createRolloutApp(deps));
  app.onError((error) => errorResponse(error, newRequestId(), deps.config));
  app.notFound((c) =>
    errorResponse(new RouteNotFoundError(c.req.method, c.req.path), newRequestId(), deps.config)
  );
  return app;
}

async function main(): Promise<void> {
  let deps: Deps;
  try {
    deps = await buildDeps(resolveConfig(Deno.env.toObject()));
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Cannot start: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
  const { config } = deps;
  const app = createGatewayApp(deps);
  const server = Deno.serve({
    hostname: config.host,
    port: config.port,
    onListen: ({ hostname, port }) => {
      // Agents in local sandboxes share this machine's network: loopback reaches us.
      const local = hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : hostname;
      deps.setListening(`http://${local.includes(":") ? `[${local}]` : local}:${port}`);
      console.log(banner(deps, `http://${hostname}:${port}`));
    },
  }, app.fetch);
  if (config.rollout.worker) deps.rollout.start();
  // Deletes closed sessions and finished rollout jobs past their retention; every process may
  // run it, it is idempotent.
  const sweeper = setInterval(() => {
    sweepExpiredSessions(deps.kv).catch((error) => console.error("Sweep failed:", error));
    sweepExpiredRollouts(deps.kv).catch((error) => console.error("Rollout sweep failed:", error));
  }, SWEEP_INTERVAL_MS);
  const stop = async () => {
    clearInterval(sweeper);
    // Running rollouts first: their agents are in-flight requests that would never end.
    console.log("Shutting down: handing running rollouts back, then waiting for requests");
    await deps.rollout.stop();
    await server.shutdown();
    await deps.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
}

if (import.meta.main) await main();
