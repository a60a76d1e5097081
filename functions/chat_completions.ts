/**
 * OpenAI's Chat Completions, as agents on LiteLLM or the OpenAI SDKs use it:
 * `POST /v1/chat/completions` (JSON, or chunks with `stream: true`), on the same session core
 * as the Messages API. Authenticated by the session token as `Authorization: Bearer` (or
 * `x-api-key`); errors in OpenAI's envelope.
 *
 * Served alone with `deno serve -A functions/chat_completions.ts`, or with the others by
 * `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import {
  type ChatCompletion,
  ChatCompletionCreateParams,
  chunkStreamShape,
  openaiErrorEnvelope,
  openaiReplyHeaders,
  openaiTurnInput,
  unsampledCompletion,
} from "../lib/openai/mod.ts";
import type { StartedTurn } from "../lib/session/mod.ts";
import { type AgentProtocol, serveTurn } from "./_agent_turn.ts";
import { type AgentRouteDeps, lazyApp } from "./_deps.ts";

/** Chat Completions as an agent protocol, decoding single tokens with `decodeToken`. */
export function chatCompletionsProtocol(
  decodeToken: (id: number) => string,
): AgentProtocol<ChatCompletionCreateParams, ChatCompletion> {
  return {
    schema: ChatCompletionCreateParams,
    recurring: ["tools"],
    turnInput: (request, context) => openaiTurnInput(request, { ...context, decodeToken }),
    nothingSampled: (request, turn) => unsampledCompletion(head(request, turn), turn.promptTokens),
    streamShape: (request, turn, stream) =>
      chunkStreamShape({
        requestId: stream.requestId,
        head: head(request, turn),
        options: { includeUsage: request.stream_options?.include_usage === true },
        rid: turn.rid,
        promptIdsFirst: request.return_token_ids === true,
        promptIds: turn.promptIds,
      }),
    errorEnvelope: openaiErrorEnvelope,
    replyHeaders: openaiReplyHeaders,
  };
}

/** The Chat Completions app over `deps`. */
export function createChatCompletionsApp(deps: AgentRouteDeps): Hono {
  const app = new Hono();
  const protocol = chatCompletionsProtocol((id) => deps.tokenizer.decode([id]));
  app.post("/v1/chat/completions", (c) => serveTurn(deps, c.req.raw, protocol));
  return app;
}

/** Id, model and creation time, as every chunk carries them. */
function head(request: ChatCompletionCreateParams, turn: StartedTurn<ChatCompletion>) {
  return {
    id: `chatcmpl-${turn.rid}`,
    model: request.model,
    created: Math.floor(Date.now() / 1000),
  };
}

export default lazyApp(createChatCompletionsApp);
