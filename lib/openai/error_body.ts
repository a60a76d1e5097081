/**
 * OpenAI's error envelope (reference anthropic-openai-api.md §3.4): `{error: {message, type,
 * param, code}}`, which the OpenAI SDKs read into their error classes, with the request id under
 * both names their clients read. The HTTP status is the same as on the Messages API; the SDKs
 * choose their error class and whether to retry by it.
 *
 * @module
 */
import type { ErrorEnvelope, ErrorReply, ErrorType } from "../errors/mod.ts";
import { ContextOverflowError } from "../session/mod.ts";
import { openaiReplyHeaders } from "./reply_headers.ts";

/** The body of an error response. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** OpenAI's names for the server-side error types; the others keep their Anthropic names. */
const TYPES: Partial<Record<ErrorType, string>> = {
  api_error: "server_error",
  overloaded_error: "server_error",
  timeout_error: "server_error",
  unavailable_error: "server_error",
  request_too_large: "invalid_request_error",
  request_timeout: "invalid_request_error",
  unprocessable_error: "invalid_request_error",
};

/**
 * The error envelope. `param` is the request path a validation message starts with
 * (`messages.2.content: …`), when it does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openaiErrorBody } from "./error_body.ts";
 * assert.deepEqual(
 *   openaiErrorBody("invalid_request_error", "n: only n = 1 is served", "invalid_request"),
 *   {
 *     error: {
 *       message: "n: only n = 1 is served",
 *       type: "invalid_request_error",
 *       param: "n",
 *       code: "invalid_request",
 *     },
 *   },
 * );
 * ```
 */
export function openaiErrorBody(type: ErrorType, message: string, code: string): OpenAIErrorBody {
  const param = message.match(/^([A-Za-z_][\w.-]*): /)?.[1] ?? null;
  return { error: { message, type: TYPES[type] ?? type, param, code } };
}

/**
 * An error in OpenAI's envelope: the gateway's error code as `code` (`context_length_exceeded`
 * for a prompt over the window, worded as OpenAI words it), the request id headers and the retry
 * headers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openaiErrorEnvelope } from "./error_body.ts";
 * const envelope = openaiErrorEnvelope({
 *   code: "session_not_found",
 *   status: 404,
 *   type: "not_found_error",
 *   message: 'Session "s1" not found',
 *   retry: false,
 *   error: null,
 *   requestId: "req_1",
 *   retryHeaders: {},
 * });
 * assert.deepEqual(envelope, {
 *   body: {
 *     error: {
 *       message: 'Session "s1" not found',
 *       type: "not_found_error",
 *       param: null,
 *       code: "session_not_found",
 *     },
 *   },
 *   headers: { "request-id": "req_1", "x-request-id": "req_1" },
 * });
 * ```
 */
export function openaiErrorEnvelope(reply: ErrorReply): ErrorEnvelope {
  const { error } = reply;
  const body = error instanceof ContextOverflowError
    ? openaiErrorBody(
      reply.type,
      contextOverflowMessage(error.promptTokens, error.contextLength, error.atLeast),
      "context_length_exceeded",
    )
    : openaiErrorBody(reply.type, reply.message, reply.code);
  return { body, headers: { ...openaiReplyHeaders(reply.requestId), ...reply.retryHeaders } };
}

/**
 * A prompt over the context window, worded as OpenAI words it: LiteLLM (mini-swe-agent,
 * SWE-agent, OpenHands) recognises "This model's maximum context length is" and raises
 * `ContextWindowExceededError`, which such agents do not retry. With `atLeast`, `promptTokens`
 * is a count the prompt is known to exceed (its encoding stopped there).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { contextOverflowMessage } from "./error_body.ts";
 * assert.ok(
 *   contextOverflowMessage(40_000, 32_768).startsWith(
 *     "This model's maximum context length is 32768 tokens. " +
 *       "However, your messages resulted in 40000 tokens",
 *   ),
 * );
 * ```
 */
export function contextOverflowMessage(
  promptTokens: number,
  contextLength: number,
  atLeast = false,
): string {
  return `This model's maximum context length is ${contextLength} tokens. However, your messages resulted in ${
    atLeast ? "more than " : ""
  }${promptTokens} tokens (one token must be left to generate). Please reduce the length of the messages.`;
}
