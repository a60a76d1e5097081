/**
 * `deno task serve`: every function on one port, from the environment's configuration.
 * Stops gracefully on SIGINT/SIGTERM: in-flight turns finish, then KV closes.
 *
 * @module
 */
import { Hono } from "hono";
import { ConfigError, resolveConfig } from "../lib/config/mod.ts";
import { buildDeps, type Deps } from "./_deps.ts";
import { errorResponse, newRequestId } from "./_http.ts";
import { createMessagesApp } from "./messages.ts";
import { createSessionsApp } from "./sessions.ts";

/** All functions mounted on one app. */
export function createGatewayApp(deps: Deps): Hono {
  const app = new Hono();
  app.route("/", createMessagesApp(deps));
  app.route("/", createSessionsApp(deps));
  app.onError((error) => errorResponse(error, newRequestId()));
  app.notFound((c) => {
    const requestId = newRequestId();
    return c.json(
      {
        type: "error",
        error: { type: "not_found_error", message: `No route for ${c.req.method} ${c.req.path}` },
        request_id: requestId,
      },
      404,
      { "request-id": requestId },
    );
  });
  return app;
}

function banner(deps: Deps, port: number): string {
  const lines = [
    `Rollout Gateway listening on http://${deps.config.host}:${port}`,
    `  KV:         ${deps.config.kvPath}`,
    `  tokenizer:  ${deps.tokenizer.path}`,
    `  context:    ${deps.contextLength} tokens`,
    `  engine:     ${deps.engine.url}`,
  ];
  if (!deps.config.adminToken) {
    lines.push(`  admin token (generated, kept in KV): ${deps.adminToken}`);
  }
  if (deps.config.devOpenSessions) {
    lines.push("  DEV_OPEN_SESSIONS is on: any unknown token opens a session");
  }
  if (deps.scripted) {
    const bar = "!".repeat(78);
    lines.unshift(
      bar,
      "!! SGLANG_URL is not set: answering with the BUILT-IN SCRIPTED ENGINE.",
      "!! Its replies are canned text, not a model. Set SGLANG_URL to serve SGLang.",
      bar,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  let config;
  try {
    config = resolveConfig(Deno.env.toObject());
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Cannot start: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
  const deps = await buildDeps(config);
  const app = createGatewayApp(deps);
  const server = Deno.serve({
    hostname: config.host,
    port: config.port,
    onListen: ({ port }) => console.log(banner(deps, port)),
  }, app.fetch);
  const stop = async () => {
    console.log("Shutting down: waiting for in-flight requests");
    await server.shutdown();
    await deps.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
}

if (import.meta.main) await main();
