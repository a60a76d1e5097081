/**
 * OpenAI's Responses API, as Codex and the OpenAI SDKs use it: `POST /v1/responses` (JSON, or
 * events with `stream: true`), stateless (`store` is accepted, nothing is kept by response id),
 * on the same session core as the Messages API and Chat Completions. Authenticated by the
 * session token as `Authorization: Bearer` (or `x-api-key`); errors in OpenAI's envelope.
 *
 * Served alone with `deno serve -A functions/responses.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import {
  offeredFunctions,
  ResponseCreateParams,
  responseHead,
  type ResponseObject,
  responseStreamShape,
  responsesTurnInput,
  unsampledResponse,
  wantsEncrypted,
} from "../lib/responses/mod.ts";
import { openaiErrorEnvelope, openaiReplyHeaders } from "../lib/openai/mod.ts";
import type { StartedTurn } from "../lib/session/mod.ts";
import { type AgentProtocol, serveTurn } from "./_agent_turn.ts";
import { type AgentRouteDeps, lazyApp } from "./_deps.ts";

/** The Responses API as an agent protocol. */
export const RESPONSES_PROTOCOL: AgentProtocol<ResponseCreateParams, ResponseObject> = {
  schema: ResponseCreateParams,
  recurring: ["tools"],
  turnInput: responsesTurnInput,
  nothingSampled: (request, turn) => unsampledResponse(head(request, turn), turn.promptTokens),
  streamShape: (request, turn, stream) =>
    responseStreamShape({
      requestId: stream.requestId,
      head: head(request, turn),
      rid: turn.rid,
      encrypted: wantsEncrypted(request),
      namespaceOf: offeredFunctions(request.tools).namespaceOf,
    }),
  errorEnvelope: openaiErrorEnvelope,
  replyHeaders: openaiReplyHeaders,
};

/** The Responses app over `deps`. */
export function createResponsesApp(deps: AgentRouteDeps): Hono {
  const app = new Hono();
  app.post("/v1/responses", (c) => serveTurn(deps, c.req.raw, RESPONSES_PROTOCOL));
  return app;
}

/** The response as `response.created` announces it. */
function head(request: ResponseCreateParams, turn: StartedTurn<ResponseObject>): ResponseObject {
  return responseHead(`resp_${turn.rid}`, request, Math.floor(Date.now() / 1000));
}

export default lazyApp(createResponsesApp);
