/**
 * One agent turn over an OpenAI protocol (Chat Completions, the Responses API), from request to
 * reply: the session token resolved first (writing nothing), the body validated and translated,
 * a first-use session stored, the turn started; then the reply as JSON, or as the protocol's
 * stream — a failure before the first keep-alive is due still answered with an HTTP status —
 * and any error in OpenAI's envelope.
 *
 * @module
 */
import type { z } from "zod";
import type { LowerOptions } from "../lib/anthropic/mod.ts";
import type { IdentityMemo } from "../lib/chat/mod.ts";
import { agentIdsOf, KNOWN_CLIENTS } from "../lib/clients/mod.ts";
import type { GatewayMetrics } from "../lib/metrics/mod.ts";
import {
  type AgentIds,
  resolveToken,
  type StartedTurn,
  startTurn,
  storeOpenedSession,
  type TurnInput,
} from "../lib/session/mod.ts";
import { type AgentRouteDeps, loweringOptions } from "./_deps.ts";
import {
  credential,
  errorOptions,
  newRequestId,
  openaiErrorResponse,
  readJson,
  validate,
} from "./_http.ts";
import { settleWithin } from "./_sse.ts";

/** What a protocol brings to a turn. */
export interface OpenAIProtocol<Body extends { stream?: boolean | null }, Reply> {
  /** The body's schema. */
  readonly schema: z.ZodType<Body>;
  /** The turn the request asks for. */
  turnInput(
    request: Body,
    context: {
      sessionId: string;
      lowering: LowerOptions;
      agent: AgentIds;
      identities: IdentityMemo;
    },
  ): TurnInput<Reply>;
  /** The reply when nothing is sampled (a request for no tokens). */
  nothingSampled(request: Body, turn: StartedTurn<Reply>): Reply;
  /** The streamed reply of a started turn. */
  stream(
    request: Body,
    turn: StartedTurn<Reply>,
    stream: {
      requestId: string;
      done: Promise<Reply>;
      pingIntervalMs: number;
      metrics: GatewayMetrics;
    },
  ): Response;
}

/** Answers one request of `protocol`. */
export async function serveOpenAITurn<Body extends { stream?: boolean | null }, Reply>(
  deps: AgentRouteDeps,
  raw: Request,
  protocol: OpenAIProtocol<Body, Reply>,
): Promise<Response> {
  const requestId = newRequestId();
  const errors = errorOptions(deps);
  try {
    // The token first, writing nothing: a stranger learns nothing about the body's checks.
    const resolved = await resolveToken(deps.kv, credential(raw), {
      devOpenSessions: deps.config.devOpenSessions,
    });
    const request = validate(protocol.schema, await readJson(raw, deps.config.maxBodyBytes));
    const input = protocol.turnInput(request, {
      sessionId: resolved.session.id,
      lowering: loweringOptions(deps),
      agent: agentIdsOf(raw.headers, KNOWN_CLIENTS),
      identities: deps.identities,
    });
    if (resolved.kind === "open") await storeOpenedSession(deps.kv, resolved.session);
    const turn = await startTurn(deps, input, raw.signal, {
      live: request.stream === true,
      session: resolved.kind === "session" ? resolved.entry : undefined,
    });
    const done = turn.completion ?? Promise.resolve(protocol.nothingSampled(request, turn));
    if (!request.stream) {
      return Response.json(await done, {
        headers: { "request-id": requestId, "x-request-id": requestId },
      });
    }
    // Until the engine samples or the first keep-alive is due, a failure can still be answered
    // with an HTTP status.
    const early = await settleWithin(done, deps.config.pingIntervalMs, turn.feed?.sampling);
    if (early && "error" in early) return openaiErrorResponse(early.error, requestId, errors);
    return protocol.stream(request, turn, {
      requestId,
      done,
      pingIntervalMs: deps.config.pingIntervalMs,
      metrics: deps.metrics,
    });
  } catch (error) {
    return openaiErrorResponse(error, requestId, errors);
  }
}
