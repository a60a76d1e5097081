/**
 * What went wrong, as a code every error the gateway raises on purpose carries, and the one
 * table that says how each code is answered: HTTP status, error type (Anthropic's names, which
 * the OpenAI surfaces map to theirs) and whether the client should retry. Domain code raises
 * coded errors and knows nothing of HTTP; `functions/_http.ts` reads the table.
 *
 * @module
 */

/**
 * Error types as the API names them: Anthropic's, plus the gateway's own `unavailable_error` (the
 * trainer routes'), `request_timeout` (a body that did not arrive) and `unprocessable_error` (a
 * rollout's task found invalid).
 */
export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "conflict_error"
  | "request_too_large"
  | "request_timeout"
  | "unprocessable_error"
  | "rate_limit_error"
  | "api_error"
  | "timeout_error"
  | "unavailable_error"
  | "overloaded_error";

/** How one code is answered. */
export interface ErrorRow {
  readonly status: number;
  readonly type: ErrorType;
  /** Tell the client to come back: `x-should-retry`, `retry-after` and `retry-after-ms`. */
  readonly retry: boolean;
}

const row = (status: number, type: ErrorType, retry = false): ErrorRow => ({ status, type, retry });

/** Every code and how it is answered. */
export const ERROR_TABLE = {
  /** A body that is not what the route takes (bad JSON, a field of the wrong shape). */
  invalid_request: row(400, "invalid_request_error"),
  /** The prompt does not fit the context window (worded the way clients detect it). */
  context_overflow: row(400, "invalid_request_error"),
  /** A client value over one of the gateway's bounds. */
  limit_exceeded: row(400, "invalid_request_error"),
  /** An image the gateway cannot give a vision model: not base64, not an image, a format or size it refuses. */
  invalid_image: row(400, "invalid_request_error"),
  invalid_cursor: row(400, "invalid_request_error"),
  invalid_session_id: row(400, "invalid_request_error"),
  /** The task's repository cannot be used (a bad URL, a commit that is not there). */
  bad_repo: row(400, "invalid_request_error"),
  unknown_judger: row(400, "invalid_request_error"),
  /** The engine refused the request (SGLang's 400). */
  engine_rejected: row(400, "invalid_request_error"),
  authentication: row(401, "authentication_error"),
  permission: row(403, "permission_error"),
  session_not_found: row(404, "not_found_error"),
  job_not_found: row(404, "not_found_error"),
  /** A session has no chain of this id (the viewer's token view). */
  chain_not_found: row(404, "not_found_error"),
  /** A session holds no image of this digest (`GET /sessions/:id/images/:digest`). */
  image_not_found: row(404, "not_found_error"),
  /** A chain recorded no routed experts, or the gateway records none (`GET /sessions/:id/routes/:chain`). */
  routes_not_found: row(404, "not_found_error"),
  /** No route for this method and path. */
  route_not_found: row(404, "not_found_error"),
  /** A folder the request names does not exist (`GET /tasks?dir=`). */
  dir_not_found: row(404, "not_found_error"),
  /**
   * A rollout asked to validate its task (`validate`), and the task is not valid: its tests do
   * not run, fail as they should not, or are flaky; nothing was queued.
   */
  task_invalid: row(422, "unprocessable_error"),
  session_exists: row(409, "conflict_error"),
  session_closed: row(409, "conflict_error"),
  /** The chain or its lease moved on while the turn generated; nothing was recorded. */
  chain_conflict: row(409, "conflict_error"),
  /** The request body did not arrive within `BODY_TIMEOUT_MS`. */
  body_timeout: row(408, "request_timeout"),
  body_too_large: row(413, "request_too_large"),
  /** An image past the bytes one image may have, or a request with more images than it may. */
  image_too_large: row(413, "request_too_large"),
  /** A judger failed while grading. */
  judger_failed: row(500, "api_error"),
  /** The chat template cannot be rendered as the gateway needs (a deployment problem). */
  template: row(500, "api_error"),
  /** The client left before the answer (mid-body, mid-turn); nobody reads this one. */
  client_disconnected: row(500, "api_error"),
  /** Anything not raised on purpose: a bug, logged. */
  internal: row(500, "api_error"),
  /** A sandbox backend that cannot work (bubblewrap missing, E2B unreachable). */
  sandbox_unavailable: row(503, "unavailable_error"),
  /** The shared store (PostgreSQL) cannot be reached or did not answer in time; nothing was written. */
  store_unavailable: row(503, "unavailable_error", true),
  /** Some engine workers refused or missed a pause, continue or weight-version call. */
  engine_control_failed: row(503, "unavailable_error"),
  /**
   * The engine answered without the routed experts a turn asked for (`ROUTED_EXPERTS`), or with
   * rows that do not fit the model or the turn: a deployment that cannot record R3; nothing is
   * recorded.
   */
  engine_routes: row(503, "unavailable_error"),
  /** The engine is down, saturated or paused. */
  engine_unavailable: row(529, "overloaded_error", true),
  /** The session or chain stayed busy past the wait. */
  lease_timeout: row(529, "overloaded_error", true),
} as const satisfies Record<string, ErrorRow>;

/** A reason something failed. */
export type ErrorCode = keyof typeof ERROR_TABLE;

/** An error raised on purpose, with its code; error classes declare `implements CodedError`. */
export interface CodedError extends Error {
  readonly code: ErrorCode;
}

/**
 * The code of any thrown value: its own, `client_disconnected` for an abort, else `internal`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionClosedError } from "../session/mod.ts";
 * import { codeOf } from "./codes.ts";
 * assert.equal(codeOf(new SessionClosedError("s1")), "session_closed");
 * assert.equal(codeOf(new TypeError("x")), "internal");
 * ```
 */
export function codeOf(error: unknown): ErrorCode {
  if (error instanceof Error && "code" in error && typeof error.code === "string") {
    if (Object.hasOwn(ERROR_TABLE, error.code)) return error.code as ErrorCode;
  }
  if (error instanceof DOMException && error.name === "AbortError") return "client_disconnected";
  return "internal";
}
