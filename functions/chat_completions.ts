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
  completionUsage,
  openaiTurnInput,
} from "../lib/openai/mod.ts";
import type { StartedTurn } from "../lib/session/mod.ts";
import { type AgentRouteDeps, lazyApp } from "./_deps.ts";
import { serveOpenAITurn } from "./_openai_turn.ts";
import { chunkStreamResponse } from "./_sse.ts";

/** The Chat Completions app over `deps`. */
export function createChatCompletionsApp(deps: AgentRouteDeps): Hono {
  const app = new Hono();
  const decodeToken = (id: number) => deps.tokenizer.decode([id]);
  app.post("/v1/chat/completions", (c) =>
    serveOpenAITurn(deps, c.req.raw, {
      schema: ChatCompletionCreateParams,
      turnInput: (request, context) => openaiTurnInput(request, { ...context, decodeToken }),
      nothingSampled,
      stream: (request, turn, stream) =>
        chunkStreamResponse({
          ...stream,
          head: head(request, turn),
          options: { includeUsage: request.stream_options?.include_usage === true },
          rid: turn.rid,
          promptIdsFirst: request.return_token_ids === true,
          promptIds: turn.promptIds,
          feed: turn.feed,
          cancel: turn.cancel,
          cancelled: () => turn.cancelled,
        }),
    }));
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

/** The answer to a request for no tokens (`max_tokens: 0`): nothing sampled, nothing recorded. */
function nothingSampled(
  request: ChatCompletionCreateParams,
  turn: StartedTurn<ChatCompletion>,
): ChatCompletion {
  return {
    ...head(request, turn),
    object: "chat.completion",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "", refusal: null },
      logprobs: null,
      finish_reason: "length",
    }],
    usage: completionUsage(turn.promptTokens, 0),
  };
}

export default lazyApp(createChatCompletionsApp);
