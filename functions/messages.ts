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
import {
  anthropicTurnInput,
  type Message,
  MessageCountTokensParams,
  MessageCreateParams,
  messageHead,
  messagesErrorEnvelope,
  messageStreamShape,
  signThinking,
  unsampledMessage,
} from "../lib/anthropic/mod.ts";
import { countPromptTokens, resolveToken } from "../lib/session/mod.ts";
import { agentIdsOf, AGENTS } from "../lib/agents/mod.ts";
import { type AgentProtocol, serveTurn } from "./_agent_turn.ts";
import { type AgentRouteDeps, type Deps, lazyApp, loweringOptions } from "./_deps.ts";
import {
  credential,
  envelopedResponse,
  errorOptions,
  newRequestId,
  readJson,
  validate,
} from "./_http.ts";

/** What the messages app uses: a turn's dependencies and the thinking-signature secret. */
export type MessagesDeps = AgentRouteDeps & Pick<Deps, "signingSecret">;

/**
 * The Messages API as an agent protocol, its thinking blocks signed with `signingSecret` (and
 * their signatures checked when they come back).
 */
export function messagesProtocol(
  signingSecret: string,
): AgentProtocol<MessageCreateParams, Message> {
  return {
    schema: MessageCreateParams,
    // Claude Code sends 31 KB of tools and 7 KB of system prompt with every turn.
    recurring: ["system", "tools"],
    turnInput: (request, context) => anthropicTurnInput(request, { ...context, signingSecret }),
    nothingSampled: (request, turn) => unsampledMessage(turn.rid, request.model, turn.promptTokens),
    streamShape: (request, turn, stream) =>
      messageStreamShape({
        head: messageHead(turn.rid, request.model, turn.promptTokens),
        rid: turn.rid,
        sign: (thinking) => signThinking(signingSecret, stream.sessionId, thinking),
      }),
    errorEnvelope: messagesErrorEnvelope,
    replyHeaders: (requestId) => ({ "request-id": requestId }),
  };
}

/** The messages app over `deps`. */
export function createMessagesApp(deps: MessagesDeps): Hono {
  const app = new Hono();
  const lowering = loweringOptions(deps);
  const errors = errorOptions(deps);
  const protocol = messagesProtocol(deps.signingSecret);

  app.post("/v1/messages", (c) => serveTurn(deps, c.req.raw, protocol));

  // Counted as the next turn would count them, so a client's context estimate (and Claude
  // Code's compaction point) matches the `usage.input_tokens` it will see. The token's session is
  // checked first, writing nothing; the request's identity is not kept (it is not a turn, and
  // must not displace a conversation's last request).
  app.post("/v1/messages/count_tokens", async (c) => {
    const requestId = newRequestId();
    try {
      const raw = c.req.raw;
      const resolved = await resolveToken(deps.kv, credential(raw), {
        devOpenSessions: deps.config.devOpenSessions,
      });
      const body = validate(
        MessageCountTokensParams,
        await readJson(raw, deps.config),
      );
      const input = anthropicTurnInput({ ...body, max_tokens: body.max_tokens ?? 0 }, {
        sessionId: resolved.session.id,
        signingSecret: deps.signingSecret,
        lowering,
        agent: agentIdsOf(raw.headers, AGENTS),
      });
      const inputTokens = await countPromptTokens(deps, input, {
        sessionExists: resolved.kind === "session",
      });
      return c.json({ input_tokens: inputTokens }, 200, { "request-id": requestId });
    } catch (error) {
      return envelopedResponse(error, requestId, errors, protocol.errorEnvelope);
    }
  });

  // Claude Code's connection-warming probe; any 2xx will do.
  app.on(["GET", "HEAD"], "/api/hello", (c) => c.body(null, 200));

  return app;
}

export default lazyApp(createMessagesApp);
