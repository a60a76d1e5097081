/**
 * The agent's surface, the Anthropic API as Claude Code and the SDKs use it:
 * `POST /v1/messages` (JSON or SSE), `POST /v1/messages/count_tokens` and `HEAD /api/hello`
 * (`GET /v1/models` is `models.ts`). Authenticated by the session token as `x-api-key` or
 * `Authorization: Bearer`; the query string (`?beta=true`) and `anthropic-beta` headers are
 * ignored.
 *
 * Served alone with `deno serve -A functions/messages.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import type { z } from "zod";
import {
  anthropicTurnInput,
  MessageCountTokensParams,
  MessageCreateParams,
  messageHead,
  signThinking,
} from "../lib/anthropic/mod.ts";
import {
  countPromptTokens,
  resolveToken,
  startTurn,
  storeOpenedSession,
} from "../lib/session/mod.ts";
import { agentIdsOf, KNOWN_CLIENTS } from "../lib/clients/mod.ts";
import type { IdentityMemo } from "../lib/chat/mod.ts";
import { type AgentRouteDeps, type Deps, lazyApp, loweringOptions } from "./_deps.ts";
import {
  credential,
  errorOptions,
  errorResponse,
  newRequestId,
  readJson,
  validate,
} from "./_http.ts";
import { settleWithin, sseResponse } from "./_sse.ts";

/** What the messages app uses: a turn's dependencies and the thinking-signature secret. */
export type MessagesDeps = AgentRouteDeps & Pick<Deps, "signingSecret">;

/** The messages app over `deps`. */
export function createMessagesApp(deps: MessagesDeps): Hono {
  const app = new Hono();
  const lowering = loweringOptions(deps);
  const errors = errorOptions(deps);

  /**
   * The token's session (checked first, writing nothing), the validated body, and its turn.
   * `identities` is left out for requests that are not turns, so they do not displace a
   * conversation's last request.
   */
  const readTurn = async (
    raw: Request,
    schema: z.ZodType<z.infer<typeof MessageCountTokensParams>>,
    identities?: IdentityMemo,
  ) => {
    const resolved = await resolveToken(deps.kv, credential(raw), {
      devOpenSessions: deps.config.devOpenSessions,
    });
    const body = validate(schema, await readJson(raw, deps.config.maxBodyBytes));
    const request = { ...body, max_tokens: body.max_tokens ?? 0 };
    const input = anthropicTurnInput(request, {
      sessionId: resolved.session.id,
      signingSecret: deps.signingSecret,
      lowering,
      // Clients that name their sub-agents (Claude Code) route their requests to their chains.
      agent: agentIdsOf(raw.headers, KNOWN_CLIENTS),
      identities,
    });
    return { resolved, request, input };
  };

  app.post("/v1/messages", async (c) => {
    const requestId = newRequestId();
    try {
      const raw = c.req.raw;
      const { resolved, request, input } = await readTurn(
        raw,
        MessageCreateParams,
        deps.identities,
      );
      if (resolved.kind === "open") await storeOpenedSession(deps.kv, resolved.session);
      const turn = await startTurn(deps, input, raw.signal, {
        live: request.stream === true,
        session: resolved.kind === "session" ? resolved.entry : undefined,
      });
      const head = messageHead(turn.rid, request.model, turn.promptTokens);
      if (turn.completion === null) {
        return c.json({ ...head, stop_reason: "max_tokens" }, 200, { "request-id": requestId });
      }
      if (!request.stream) {
        return c.json(await turn.completion, 200, { "request-id": requestId });
      }
      // Until the engine samples or the first ping is due, a failure can still be answered with
      // an HTTP status.
      const early = await settleWithin(
        turn.completion,
        deps.config.pingIntervalMs,
        turn.feed?.sampling,
      );
      if (early && "error" in early) return errorResponse(early.error, requestId, errors);
      const sessionId = resolved.session.id;
      return sseResponse({
        requestId,
        head,
        rid: turn.rid,
        sign: (thinking) => signThinking(deps.signingSecret, sessionId, thinking),
        done: turn.completion,
        feed: turn.feed,
        cancel: turn.cancel,
        cancelled: () => turn.cancelled,
        pingIntervalMs: deps.config.pingIntervalMs,
        metrics: deps.metrics,
      });
    } catch (error) {
      return errorResponse(error, requestId, errors);
    }
  });

  // Counted as the next turn would count them, so a client's context estimate (and Claude
  // Code's compaction point) matches the `usage.input_tokens` it will see.
  app.post("/v1/messages/count_tokens", async (c) => {
    const requestId = newRequestId();
    try {
      const { resolved, input } = await readTurn(c.req.raw, MessageCountTokensParams);
      const inputTokens = await countPromptTokens(deps, input, {
        sessionExists: resolved.kind === "session",
      });
      return c.json({ input_tokens: inputTokens }, 200, { "request-id": requestId });
    } catch (error) {
      return errorResponse(error, requestId, errors);
    }
  });

  // Claude Code's connection-warming probe; any 2xx will do.
  app.on(["GET", "HEAD"], "/api/hello", (c) => c.body(null, 200));

  return app;
}

export default lazyApp(createMessagesApp);
