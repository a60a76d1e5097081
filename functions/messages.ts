/**
 * The agent's surface: `POST /v1/messages` (Anthropic Messages API, JSON or SSE), authenticated
 * by the session token as `x-api-key` or `Authorization: Bearer`.
 *
 * Served alone with `deno serve -A functions/messages.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { anthropicTurnInput, MessageCreateParams, messageHead } from "../lib/anthropic/mod.ts";
import { completeTurn, prepareTurn, resolveToken, storeOpenedSession } from "../lib/session/mod.ts";
import { type Deps, lazyApp } from "./_deps.ts";
import { credential, errorResponse, newRequestId, readJson, validate } from "./_http.ts";
import { settleWithin, sseResponse } from "./_sse.ts";

/** The messages app over `deps`. */
export function createMessagesApp(deps: Deps): Hono {
  const app = new Hono();
  app.post("/v1/messages", async (c) => {
    const requestId = newRequestId();
    try {
      const raw = c.req.raw;
      const resolved = await resolveToken(deps.kv, credential(raw), {
        devOpenSessions: deps.config.devOpenSessions,
      });
      const request = validate(MessageCreateParams, await readJson(raw, deps.config.maxBodyBytes));
      const input = anthropicTurnInput(request, {
        sessionId: resolved.session.id,
        signingSecret: deps.signingSecret,
      });
      if (resolved.kind === "open") await storeOpenedSession(deps.kv, resolved.session);
      const prepared = await prepareTurn(deps, input);
      const head = messageHead(prepared.rid, request.model, prepared.promptTokens);
      if (request.max_tokens === 0) {
        return c.json({ ...head, stop_reason: "max_tokens" }, 200, { "request-id": requestId });
      }
      const abort = new AbortController();
      raw.signal.addEventListener("abort", () => abort.abort(raw.signal.reason), { once: true });
      const done = completeTurn(deps, prepared, abort.signal);
      if (!request.stream) {
        return c.json(await done, 200, { "request-id": requestId });
      }
      // Until the first ping is due, a failure can still be answered with an HTTP status.
      const early = await settleWithin(done, deps.config.pingIntervalMs);
      if (early && "error" in early) return errorResponse(early.error, requestId);
      return sseResponse({
        requestId,
        head,
        done,
        abort,
        pingIntervalMs: deps.config.pingIntervalMs,
      });
    } catch (error) {
      return errorResponse(error, requestId);
    }
  });
  return app;
}

export default lazyApp(createMessagesApp);
