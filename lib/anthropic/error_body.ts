/**
 * Anthropic's error envelope, used for every error the gateway returns.
 *
 * @module
 */
import type { ErrorType } from "../errors/mod.ts";

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

/** The body of an error response. */
export interface ErrorBody {
  type: "error";
  error: { type: ErrorType; message: string };
  request_id: string;
}

/**
 * The error envelope.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorBody } from "./error_body.ts";
 * assert.deepEqual(errorBody("not_found_error", 'Session "s1" not found', "req_1"), {
 *   type: "error",
 *   error: { type: "not_found_error", message: 'Session "s1" not found' },
 *   request_id: "req_1",
 * });
 * ```
 */
export function errorBody(type: ErrorType, message: string, requestId: string): ErrorBody {
  return { type: "error", error: { type, message }, request_id: requestId };
}
