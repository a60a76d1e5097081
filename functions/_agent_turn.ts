/**
 * One agent turn, whatever the protocol (the Messages API, Chat Completions, the Responses API),
 * from request to reply: the session token resolved first (writing nothing), the body validated
 * and translated, a first-use session stored, the turn started; then the reply as JSON, or as the
 * protocol's stream — a failure before the first keep-alive is due still answered with an HTTP
 * status — and any error in the protocol's envelope. A protocol is an {@linkcode AgentProtocol}
 * record of pure parts from its folder of `lib/` (its stream's shape and its error envelope among
 * them: this file and the plumbing it calls know no protocol's bytes); its route is one line.
 *
 * @module
 */
import type { z } from "zod";
import type { LowerOptions } from "../lib/anthropic/mod.ts";
import type { IdentityMemo } from "../lib/chat/mod.ts";
import { type AgentIds, agentIdsOf, AGENTS } from "../lib/agents/mod.ts";
import type { ErrorEnvelope, ErrorReply } from "../lib/errors/mod.ts";
import {
  resolveToken,
  type StartedTurn,
  startTurn,
  storeOpenedSession,
  type StreamShape,
  type TurnInput,
} from "../lib/session/mod.ts";
import { type AgentRouteDeps, loweringOptions } from "./_deps.ts";
import {
  credential,
  envelopedResponse,
  errorOptions,
  newRequestId,
  readTurnJson,
  validate,
} from "./_http.ts";
import { settleWithin, streamResponse } from "./_sse.ts";

/** What a protocol's translation is given besides the request. */
export interface TurnContext {
  readonly sessionId: string;
  readonly lowering: LowerOptions;
  /** The agent ids the client's headers name (Claude Code's sub-agents). */
  readonly agent: AgentIds;
  readonly identities: IdentityMemo;
}

/** What the protocol's stream shape is given besides the request and the turn. */
export interface StreamContext {
  readonly requestId: string;
  /** The turn's session. */
  readonly sessionId: string;
}

/** One agent protocol: its body, its translation into a turn, its replies and its errors. */
export interface AgentProtocol<Body extends { stream?: boolean | null }, Reply> {
  /** The body's schema. */
  readonly schema: z.ZodType<Body>;
  /**
   * Top-level fields an agent sends again verbatim every turn (its tools), parsed and validated
   * once per text (`RecurringFields`).
   */
  readonly recurring: readonly string[];
  /** The turn the request asks for. */
  turnInput(request: Body, context: TurnContext): TurnInput<Reply>;
  /** The reply when nothing is sampled (a request for no tokens): nothing is recorded. */
  nothingSampled(request: Body, turn: StartedTurn<Reply>): Reply;
  /** What the streamed reply of a started turn writes at each point. */
  streamShape(request: Body, turn: StartedTurn<Reply>, stream: StreamContext): StreamShape<Reply>;
  /** An error in the protocol's envelope: its body and headers. */
  errorEnvelope(reply: ErrorReply): ErrorEnvelope;
  /** The headers of a JSON reply (the request id, as the protocol's clients read it). */
  replyHeaders(requestId: string): Record<string, string>;
}

/** Answers one request of `protocol`. */
export async function serveTurn<Body extends { stream?: boolean | null }, Reply>(
  deps: AgentRouteDeps,
  raw: Request,
  protocol: AgentProtocol<Body, Reply>,
): Promise<Response> {
  const requestId = newRequestId();
  const errors = errorOptions(deps);
  const answer = (error: unknown) =>
    envelopedResponse(error, requestId, errors, (reply) => protocol.errorEnvelope(reply));
  try {
    // The token first, writing nothing: a stranger learns nothing about the body's checks.
    const resolved = await resolveToken(deps.kv, credential(raw), {
      devOpenSessions: deps.config.devOpenSessions,
    });
    const body = await readTurnJson(raw, deps.config, deps.recurringFields, protocol.recurring);
    const request = validate(protocol.schema, body.value, body.held);
    const input = protocol.turnInput(request, {
      sessionId: resolved.session.id,
      lowering: loweringOptions(deps),
      // Clients that name their sub-agents (Claude Code) route their requests to their chains.
      agent: agentIdsOf(raw.headers, AGENTS),
      identities: deps.identities,
    });
    if (resolved.kind === "open") await storeOpenedSession(deps.kv, resolved.session);
    const turn = await startTurn(deps, input, raw.signal, {
      live: request.stream === true,
      session: resolved.kind === "session" ? resolved.entry : undefined,
    });
    const done = turn.completion ?? Promise.resolve(protocol.nothingSampled(request, turn));
    if (!request.stream) {
      return Response.json(await done, { headers: protocol.replyHeaders(requestId) });
    }
    // Until the engine samples or the first keep-alive is due, a failure can still be answered
    // with an HTTP status.
    const early = await settleWithin(done, deps.config.pingIntervalMs, turn.feed?.sampling);
    if (early && "error" in early) return answer(early.error);
    const shape = protocol.streamShape(request, turn, {
      requestId,
      sessionId: resolved.session.id,
    });
    return streamResponse({
      requestId,
      done,
      feed: turn.feed,
      cancel: turn.cancel,
      cancelled: () => turn.cancelled,
      pingIntervalMs: deps.config.pingIntervalMs,
      metrics: deps.metrics,
    }, shape);
  } catch (error) {
    return answer(error);
  }
}
