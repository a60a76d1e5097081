/**
 * Everything an agent talks to: the Messages API, Chat Completions, the Responses API and the
 * model list, at the root (the session token in a header) and under a per-session base URL,
 * `/sessions/<token>/v1/…`, for agents that cannot set headers (the token in the path is the
 * credential). A per-session request is answered as the same request at `/v1/…` with the token
 * as `Authorization: Bearer`; the path with the token is never logged or echoed in an error. The
 * path is matched as the edge normalised it (`_edge.ts`): the token is the one that routed it.
 *
 * Served alone with `deno serve -A functions/agents.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { lazyApp } from "./_deps.ts";
import { withErrorEnvelope } from "./_edge.ts";
import { errorOptions, RouteNotFoundError } from "./_http.ts";
import { createChatCompletionsApp } from "./chat_completions.ts";
import { createMessagesApp, type MessagesDeps } from "./messages.ts";
import { createModelsApp, type ModelsDeps } from "./models.ts";
import { createResponsesApp } from "./responses.ts";

/** A path under a per-session base URL: the token segment and the API path after it. */
const SESSION_PATH = /^\/sessions\/([^/]+)(\/v1\/.*)$/;

/** What the agents' app uses: what each of its four apps does. */
export type AgentsDeps = MessagesDeps & ModelsDeps;

/** The agents' app over `deps`. */
export function createAgentsApp(deps: AgentsDeps): Hono {
  const app = new Hono();
  // First, so no route under /sessions (the trainer's, admin only) sees these requests.
  app.all("/sessions/:token/v1/*", (c) => {
    const raw = c.req.raw;
    const url = new URL(raw.url);
    // The edge normalised the URL, so the path the route matched is this one.
    const match = url.pathname.match(SESSION_PATH);
    if (!match) throw new RouteNotFoundError(raw.method, c.req.path);
    const [, segment, rest] = match;
    // A decoded segment that cannot be a header value (control characters) is no token either:
    // sent as written, it is refused as one.
    let token = segment;
    try {
      const decoded = decodeURIComponent(segment);
      if (/^[\x21-\x7e]+$/.test(decoded)) token = decoded;
    } catch { /* not percent-encoding: sent as written */ }
    url.pathname = rest;
    const headers = new Headers(raw.headers);
    headers.delete("x-api-key");
    headers.set("authorization", `Bearer ${token}`);
    return app.fetch(
      new Request(url, { method: raw.method, headers, body: raw.body, signal: raw.signal }),
    );
  });
  app.route("/", createMessagesApp(deps));
  app.route("/", createChatCompletionsApp(deps));
  app.route("/", createResponsesApp(deps));
  app.route("/", createModelsApp(deps));
  // Per-session requests are answered by this app itself: its misses in the JSON envelope too.
  return withErrorEnvelope(app, errorOptions(deps));
}

export default lazyApp(createAgentsApp);
