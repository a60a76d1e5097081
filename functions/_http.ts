/**
 * HTTP plumbing shared by the functions: bounded body reading, credentials, request ids, and
 * the one place errors become responses.
 *
 * @module
 */
import type { CodedError } from "../lib/errors/mod.ts";
import { ZodError } from "zod";
import { errorBody, type ErrorType, InvalidRequestError } from "../lib/anthropic/mod.ts";
import { codeOf, ERROR_TABLE, type ErrorCode } from "../lib/errors/mod.ts";
import type { GatewayMetrics } from "../lib/metrics/mod.ts";
import { jsonShapeProblem, MAX_JSON_DEPTH, readCapped } from "../lib/limits/mod.ts";
import { contextOverflowMessage, openaiErrorBody } from "../lib/openai/mod.ts";
import { ContextOverflowError } from "../lib/session/mod.ts";

/** The body exceeds the configured limit (HTTP 413). */
export class BodyTooLargeError extends Error implements CodedError {
  readonly code = "body_too_large" as const;
  constructor(limit: number) {
    super(`Request body is larger than ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/** The caller is known but may not use this route (HTTP 403). */
export class PermissionError extends Error implements CodedError {
  readonly code = "permission" as const;
  constructor(message: string) {
    super(message);
    this.name = "PermissionError";
  }
}

/** No route answers this method and path (HTTP 404). */
export class RouteNotFoundError extends Error implements CodedError {
  readonly code = "route_not_found" as const;
  constructor(method: string, path: string) {
    super(`No route for ${method} ${path}`);
    this.name = "RouteNotFoundError";
  }
}

/** A fresh request id, sent as the `request-id` header and in error bodies. */
export function newRequestId(): string {
  return `req_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** The credential of a request: `x-api-key`, or the bearer token of `Authorization`. */
export function credential(request: Request): string | null {
  const apiKey = request.headers.get("x-api-key");
  if (apiKey) return apiKey.trim();
  const auth = request.headers.get("authorization");
  const match = auth?.match(/^Bearer\s+(.+)$/i);
  return match ? match[1].trim() : null;
}

/**
 * The request body parsed as JSON, read no further than `limit` bytes, nested at most
 * {@linkcode MAX_JSON_DEPTH} deep and without `__proto__` keys. An empty body is refused, unless
 * `options.empty` says what it stands for.
 *
 * @throws {BodyTooLargeError} past the limit; {@linkcode InvalidRequestError} for bad JSON or
 * a bad shape.
 */
export async function readJson(
  request: Request,
  limit: number,
  options: { readonly empty?: unknown } = {},
): Promise<unknown> {
  const declared = request.headers.get("content-length");
  let text: string;
  if (declared !== null && /^\d+$/.test(declared)) {
    // HTTP framing holds the body to its declared length.
    if (Number(declared) > limit) throw new BodyTooLargeError(limit);
    text = await request.text();
  } else {
    const bytes = await readCapped(request.body, limit);
    if (bytes === null) throw new BodyTooLargeError(limit);
    text = new TextDecoder().decode(bytes);
  }
  if (text.trim().length === 0) {
    if (options.empty !== undefined) return options.empty;
    throw new InvalidRequestError("Request body is empty: expected JSON");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidRequestError(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  const problem = jsonShapeProblem(value, MAX_JSON_DEPTH);
  if (problem) {
    throw new InvalidRequestError(`${problem.path || "Request body"}: ${problem.message}`);
  }
  return value;
}

/** Parses `value` with a zod schema, reporting the first problems with their paths. */
export function validate<T>(
  schema: {
    safeParse(value: unknown): { success: true; data: T } | { success: false; error: ZodError };
  },
  value: unknown,
): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new InvalidRequestError(describeZodError(parsed.error));
}

function describeZodError(error: ZodError): string {
  return error.issues.slice(0, 3).map((issue) => describeIssue(issue, [])).join("; ");
}

type Issue = ZodError["issues"][number];

/** One issue as `path: message`, descending into the union branch that got furthest. */
function describeIssue(issue: Issue, base: PropertyKey[]): string {
  const path = [...base, ...issue.path];
  if (issue.code === "invalid_union" && issue.errors.length > 0) {
    const depth = (branch: Issue[]) => branch[0]?.path.length ?? -1;
    const furthest = issue.errors.reduce((best, branch) =>
      depth(branch) >= depth(best) ? branch : best
    );
    if (furthest.length > 0) return describeIssue(furthest[0], path);
  }
  let message = issue.message;
  if (issue.code === "invalid_union" && "options" in issue && Array.isArray(issue.options)) {
    message = `unknown type; expected one of ${issue.options.join(", ")}`;
  } else if (issue.code === "invalid_type" && /received undefined/.test(issue.message)) {
    message = "field required";
  }
  const where = path.map(String).join(".");
  return where ? `${where}: ${message}` : message;
}

/** How errors are answered: the wait suggested to clients of an overloaded engine. */
export interface ErrorOptions {
  /** `RETRY_AFTER_MS`. */
  readonly retryAfterMs: number;
  /** Counts every error answered, by code. */
  readonly metrics?: GatewayMetrics;
}

/**
 * How a function built from `deps` answers errors: `RETRY_AFTER_MS`, each counted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import { InvalidRequestError } from "../lib/anthropic/mod.ts";
 * import { errorOptions, errorResponse, newRequestId } from "./_http.ts";
 * const app = new Hono().get("/", () => {
 *   throw new InvalidRequestError("messages: at least one message is required");
 * });
 * const options = errorOptions({ config: { retryAfterMs: 1_000 } });
 * app.onError((error) => errorResponse(error, newRequestId(), options));
 * assert.equal((await app.request("/")).status, 400);
 * ```
 */
export function errorOptions(
  deps: { readonly config: { readonly retryAfterMs: number }; readonly metrics?: GatewayMetrics },
): ErrorOptions {
  return { retryAfterMs: deps.config.retryAfterMs, metrics: deps.metrics };
}

/** What an error tells its client, from its code's row in {@linkcode ERROR_TABLE}. */
export interface ErrorAnswer {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly message: string;
  /** The client should come back later (see {@linkcode retryHeaders}). */
  readonly retry: boolean;
}

/**
 * The answer to an error. An error not raised on purpose is logged and answered as
 * "Internal error" (a 500 is always a bug); its message may hold anything.
 */
export function describeError(error: unknown): ErrorAnswer {
  const code = codeOf(error);
  const { status, type, retry } = ERROR_TABLE[code];
  if (code === "internal") console.error("Unexpected error:", error);
  const message = code === "internal"
    ? "Internal error"
    : code === "client_disconnected"
    ? "Client disconnected"
    : (error as Error).message;
  return { code, status, type, message, retry };
}

/** The headers that ask a client to come back after `RETRY_AFTER_MS` (`retry-after` in seconds). */
export function retryHeaders(options: ErrorOptions): Record<string, string> {
  return {
    "x-should-retry": "true",
    "retry-after": String(Math.ceil(options.retryAfterMs / 1000)),
    "retry-after-ms": String(options.retryAfterMs),
  };
}

/** The status, error type, message and extra headers of an error's HTTP response. */
export function classifyError(
  error: unknown,
  options: ErrorOptions,
): { status: number; type: ErrorType; message: string; headers?: Record<string, string> } {
  const { code, status, type, message, retry } = describeError(error);
  options.metrics?.errors.inc(code);
  return retry
    ? { status, type, message, headers: retryHeaders(options) }
    : { status, type, message };
}

/** The HTTP response for an error, in Anthropic's envelope. */
export function errorResponse(error: unknown, requestId: string, options: ErrorOptions): Response {
  const { status, type, message, headers } = classifyError(error, options);
  return Response.json(errorBody(type, message, requestId), {
    status,
    headers: { "request-id": requestId, ...headers },
  });
}

/**
 * The HTTP response for an error, in OpenAI's envelope: the same status and retry headers, the
 * gateway's error code as `code` (`context_length_exceeded` for a prompt over the window, worded
 * as OpenAI words it).
 */
export function openaiErrorResponse(
  error: unknown,
  requestId: string,
  options: ErrorOptions,
): Response {
  const { status, type, message, headers } = classifyError(error, options);
  const body = error instanceof ContextOverflowError
    ? openaiErrorBody(
      type,
      contextOverflowMessage(error.promptTokens, error.contextLength, error.atLeast),
      "context_length_exceeded",
    )
    : openaiErrorBody(type, message, codeOf(error));
  return Response.json(body, {
    status,
    headers: { "request-id": requestId, "x-request-id": requestId, ...headers },
  });
}
