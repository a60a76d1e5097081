/**
 * Anthropic's error types and their statuses, and the Messages API's error envelope, which is
 * the gateway's own (`lib/errors/gateway_envelope.ts`: every JSON error the gateway returns
 * outside the OpenAI protocols is in it).
 *
 * @module
 */
import { type EnvelopeOf, type ErrorType, gatewayErrorEnvelope } from "../errors/mod.ts";

/**
 * Anthropic error types and the HTTP status each one travels with, plus the gateway's own
 * `unavailable_error` (503), which only the trainer's routes send (a sandbox backend that
 * cannot work: bubblewrap missing, E2B unreachable), `request_timeout` (408: a request body
 * that did not arrive in time) and `unprocessable_error` (422: a rollout's task its validation
 * found invalid).
 */
export const ERROR_STATUS: Readonly<Record<ErrorType, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_timeout: 408,
  conflict_error: 409,
  request_too_large: 413,
  unprocessable_error: 422,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  unavailable_error: 503,
  overloaded_error: 529,
};

export type { ErrorType };

/**
 * The Messages API's error envelope: the gateway's own (`gatewayErrorEnvelope`), since that is
 * Anthropic's shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messagesErrorEnvelope } from "./error_body.ts";
 * const envelope = messagesErrorEnvelope({
 *   code: "session_not_found",
 *   status: 404,
 *   type: "not_found_error",
 *   message: 'Session "s1" not found',
 *   retry: false,
 *   error: null,
 *   requestId: "req_1",
 *   retryHeaders: {},
 * });
 * assert.deepEqual(envelope.body, {
 *   type: "error",
 *   error: { type: "not_found_error", message: 'Session "s1" not found' },
 *   request_id: "req_1",
 * });
 * ```
 */
export const messagesErrorEnvelope: EnvelopeOf = gatewayErrorEnvelope;
