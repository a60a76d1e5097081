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
import { ChatCompletionCreateParams, completionUsage, openaiTurnInput } from "../lib/openai/mod.ts";
import type { ChatCompletion } from "../lib/openai/mod.ts";
import { resolveToken, startTurn, storeOpenedSession } from "../lib/session/mod.ts";
import { type Deps, lazyApp } from "./_deps.ts";
import { credential, newRequestId, openaiErrorResponse, readJson, validate } from "./_http.ts";
import { chunkStreamResponse, settleWithin } from "./_sse.ts";

/** The Chat Completions app over `deps`. */
export function createChatCompletionsApp(deps: Deps): Hono {
  const app = new Hono();
  const lowering = {
    images: deps.config.imagePolicy,
    keepAttribution: deps.config.keepAttribution,
  };
  const errors = { retryAfterMs: deps.config.retryAfterMs };
  const decodeToken = (id: number) => deps.tokenizer.decode([id]);

  app.post("/v1/chat/completions", async (c) => {
    const requestId = newRequestId();
    try {
      const raw = c.req.raw;
      // The token first, writing nothing: a stranger learns nothing about the body's checks.
      const resolved = await resolveToken(deps.kv, credential(raw), {
        devOpenSessions: deps.config.devOpenSessions,
      });
      const request = validate(
        ChatCompletionCreateParams,
        await readJson(raw, deps.config.maxBodyBytes),
      );
      const input = openaiTurnInput(request, {
        sessionId: resolved.session.id,
        lowering,
        decodeToken,
      });
      if (resolved.kind === "open") await storeOpenedSession(deps.kv, resolved.session);
      const turn = await startTurn(deps, input, raw.signal);
      const head = {
        id: `chatcmpl-${turn.rid}`,
        model: request.model,
        created: Math.floor(Date.now() / 1000),
      };
      const headers = { "request-id": requestId, "x-request-id": requestId };
      const done = turn.completion ?? Promise.resolve(nothingSampled(head, turn.promptTokens));
      if (!request.stream) return c.json(await done, 200, headers);
      // Until the first keep-alive is due, a failure can still be answered with an HTTP status.
      const early = await settleWithin(done, deps.config.pingIntervalMs);
      if (early && "error" in early) return openaiErrorResponse(early.error, requestId, errors);
      return chunkStreamResponse({
        requestId,
        head,
        options: { includeUsage: request.stream_options?.include_usage === true },
        promptIdsFirst: request.return_token_ids === true,
        done,
        cancel: turn.cancel,
        cancelled: () => turn.cancelled,
        pingIntervalMs: deps.config.pingIntervalMs,
      });
    } catch (error) {
      return openaiErrorResponse(error, requestId, errors);
    }
  });

  return app;
}

/** The answer to a request for no tokens (`max_tokens: 0`): nothing sampled, nothing recorded. */
function nothingSampled(
  head: { id: string; model: string; created: number },
  promptTokens: number,
): ChatCompletion {
  return {
    ...head,
    object: "chat.completion",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "", refusal: null },
      logprobs: null,
      finish_reason: "length",
    }],
    usage: completionUsage(promptTokens, 0),
  };
}

export default lazyApp(createChatCompletionsApp);
