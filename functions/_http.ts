/**
 * HTTP plumbing shared by the functions: bounded body reading, credentials, request ids, and
 * the one place errors become responses (an error's answer from `ERROR_TABLE`, in the envelope of
 * the protocol that answers it, or the gateway's own).
 *
 * @module
 */
import type { CodedError } from "../lib/errors/mod.ts";
import { z, ZodError } from "zod";
import type { RecurringFields, RecurringParse, RecurringValue } from "../lib/cache/mod.ts";
import { InvalidRequestError } from "../lib/errors/mod.ts";
import {
  codeOf,
  type EnvelopeOf,
  ERROR_TABLE,
  type ErrorAnswer,
  type ErrorType,
  gatewayErrorEnvelope,
} from "../lib/errors/mod.ts";
import type { GatewayMetrics } from "../lib/metrics/mod.ts";
import { jsonShapeProblem, MAX_JSON_DEPTH, readCapped } from "../lib/limits/mod.ts";
import { AuthenticationError } from "../lib/session/mod.ts";

/** The body exceeds the configured limit (HTTP 413). */
export class BodyTooLargeError extends Error implements CodedError {
  readonly code = "body_too_large" as const;
  constructor(limit: number) {
    super(`Request body is larger than ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/** The body did not arrive within `BODY_TIMEOUT_MS` (HTTP 408). */
export class BodyTimeoutError extends Error implements CodedError {
  readonly code = "body_timeout" as const;
  constructor(timeoutMs: number) {
    super(`Request body did not arrive within ${timeoutMs} ms`);
    this.name = "BodyTimeoutError";
  }
}

/** The client closed its connection before its body was whole: nobody reads the answer. */
export class ClientDisconnectedError extends Error implements CodedError {
  readonly code = "client_disconnected" as const;
  constructor(cause: unknown) {
    super("Client disconnected before its request body was whole", { cause });
    this.name = "ClientDisconnectedError";
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

/**
 * The credential of an agent's request: its `x-api-key` (Anthropic's clients send it) or the
 * bearer token of `Authorization` (OpenAI's, and Claude Code's `ANTHROPIC_AUTH_TOKEN`). Both may
 * be sent when they agree; two different tokens are refused rather than one picked.
 *
 * @throws {AuthenticationError} when the two headers carry different tokens.
 */
export function credential(request: Request): string | null {
  const apiKey = request.headers.get("x-api-key")?.trim() || null;
  const bearer = bearerToken(request);
  if (apiKey !== null && bearer !== null && apiKey !== bearer) {
    throw new AuthenticationError(
      "x-api-key and Authorization carry different tokens: send the session token in one",
    );
  }
  return apiKey ?? bearer;
}

/**
 * The bearer token of `Authorization`: the admin routes' one credential (`x-api-key` is the
 * agents' header, and is not read there).
 */
export function bearerToken(request: Request): string | null {
  const auth = request.headers.get("authorization");
  const match = auth?.match(/^Bearer\s+(.+)$/i);
  return match ? match[1].trim() : null;
}

/** How much of a request body is read, and for how long. */
export interface BodyBounds {
  /** `MAX_BODY_BYTES`: past it, 413. */
  readonly maxBodyBytes: number;
  /** `BODY_TIMEOUT_MS`: the body not whole by then, 408. */
  readonly bodyTimeoutMs: number;
}

/**
 * The request body parsed as JSON, within `bounds`, nested at most {@linkcode MAX_JSON_DEPTH}
 * deep and without `__proto__` keys. An empty body is refused, unless `options.empty` says what it
 * stands for.
 *
 * @throws {BodyTooLargeError} past the limit; {@linkcode InvalidRequestError} for bad JSON or
 * a bad shape; what {@linkcode readBody} throws.
 */
export async function readJson(
  request: Request,
  bounds: BodyBounds,
  options: { readonly empty?: unknown } = {},
): Promise<unknown> {
  const text = await readText(request, bounds);
  if (text.trim().length === 0) {
    if (options.empty !== undefined) return options.empty;
    throw new InvalidRequestError("Request body is empty: expected JSON");
  }
  return checked(text, (json) => ({ value: JSON.parse(json), held: new Map() })).value;
}

/**
 * {@linkcode readJson} for an agent's turn: the top-level fields `keys` that the agent sends
 * again each turn (its tools) come from `memo` when their text is one held there, parsed and
 * checked once.
 */
export async function readTurnJson(
  request: Request,
  bounds: BodyBounds,
  memo: RecurringFields,
  keys: readonly string[],
): Promise<RecurringParse> {
  const text = await readText(request, bounds);
  if (text.trim().length === 0) {
    throw new InvalidRequestError("Request body is empty: expected JSON");
  }
  return checked(text, (json) => memo.parse(json, keys));
}

/** The body as text (UTF-8), within `bounds`. */
async function readText(request: Request, bounds: BodyBounds): Promise<string> {
  return new TextDecoder().decode(await readBody(request, bounds));
}

/**
 * The body's bytes, within `bounds`. A body of a declared length is read in one step (the
 * runtime's fast path: a read per chunk costs a Claude-Code-sized body ~0.1 ms more); one sent in
 * chunks is read a chunk at a time, and cancelled when given up on. Once it is answered, a request
 * whose body never came holds nothing of the gateway's but its pending read; Deno's HTTP/1 server
 * keeps its connection until the client sends the rest or closes it (docs/api.md: a load
 * balancer's client timeout bounds that).
 *
 * @throws {BodyTooLargeError} past `maxBodyBytes`; {@linkcode BodyTimeoutError} when it is not
 * whole within `bodyTimeoutMs`; {@linkcode ClientDisconnectedError} when the client leaves first.
 */
export async function readBody(request: Request, bounds: BodyBounds): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared)) {
    // HTTP framing holds the body to its declared length: one past the limit is refused unread.
    if (Number(declared) > bounds.maxBodyBytes) throw new BodyTooLargeError(bounds.maxBodyBytes);
    return await beforeDeadline(request.bytes(), bounds.bodyTimeoutMs);
  }
  const stop = new AbortController();
  const reading = readCapped(request.body, bounds.maxBodyBytes, stop.signal);
  const bytes = await beforeDeadline(reading, bounds.bodyTimeoutMs, () => stop.abort());
  if (bytes === null) throw new BodyTooLargeError(bounds.maxBodyBytes);
  return bytes;
}

/**
 * What `reading` a body gives, unless it takes longer than `timeoutMs` (then `giveUp` is called,
 * and the read left to end as it will) or the client leaves first.
 */
async function beforeDeadline<T>(
  reading: Promise<T>,
  timeoutMs: number,
  giveUp?: () => void,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BodyTimeoutError(timeoutMs)), timeoutMs);
  });
  try {
    return await Promise.race([reading, late]);
  } catch (error) {
    if (error instanceof BodyTimeoutError) {
      reading.catch(() => {});
      giveUp?.();
      throw error;
    }
    if (CONNECTION_ERRORS.some((type) => error instanceof type)) {
      throw new ClientDisconnectedError(error);
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Errors of a body's connection, as Deno raises them when the client is gone. */
const CONNECTION_ERRORS = [
  Deno.errors.BadResource,
  Deno.errors.ConnectionReset,
  Deno.errors.ConnectionAborted,
  Deno.errors.BrokenPipe,
  Deno.errors.UnexpectedEof,
  Deno.errors.Interrupted,
  Deno.errors.Http,
];

/** `text` parsed by `parse` and checked for its shape (the values held were checked once). */
function checked(text: string, parse: (text: string) => RecurringParse): RecurringParse {
  let parsed: RecurringParse;
  try {
    parsed = parse(text);
  } catch (error) {
    throw new InvalidRequestError(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  const held = parsed.held.size > 0 ? new Set([...parsed.held.values()].map((v) => v.value)) : null;
  const problem = jsonShapeProblem(parsed.value, MAX_JSON_DEPTH, held);
  if (problem) {
    throw new InvalidRequestError(`${problem.path || "Request body"}: ${problem.message}`);
  }
  return parsed;
}

/**
 * Parses `value` with a zod schema, reporting the first problems with their paths. The fields
 * `held` (an object schema's fields whose values come from a {@linkcode RecurringFields}) are
 * validated once per held value, and the rest of the body each time.
 */
export function validate<T>(
  schema: {
    safeParse(value: unknown): { success: true; data: T } | { success: false; error: ZodError };
  },
  value: unknown,
  held?: ReadonlyMap<string, RecurringValue>,
): T {
  if (held && held.size > 0) {
    const fast = validateHeld<T>(schema, value, held);
    if (fast) return fast.data;
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new InvalidRequestError(describeZodError(parsed.error));
}

/** Object schemas without some fields, by schema and the fields' names. */
const omitted = new WeakMap<object, Map<string, z.ZodObject | null>>();

/**
 * `schema` with the fields `held` validated by their held values, the rest as usual; `null` when
 * the schema is not an object schema or anything fails (the whole body is validated then, and
 * its problems reported as ever).
 */
function validateHeld<T>(
  schema: unknown,
  value: unknown,
  held: ReadonlyMap<string, RecurringValue>,
): { data: T } | null {
  if (!(schema instanceof z.ZodObject)) return null;
  const fields: [string, unknown][] = [];
  for (const [key, field] of held) {
    const fieldSchema = schema.shape[key] as z.ZodType | undefined;
    if (!fieldSchema) return null;
    const valid = field.validated(fieldSchema, (v) => fieldSchema.safeParse(v));
    if (!valid) return null;
    fields.push([key, valid.data]);
  }
  const names = [...held.keys()].sort().join("\n");
  let bySchema = omitted.get(schema);
  if (!bySchema) omitted.set(schema, bySchema = new Map());
  let rest = bySchema.get(names);
  if (rest === undefined) {
    try {
      const mask = Object.fromEntries([...held.keys()].map((key) => [key, true]));
      rest = (schema as z.ZodObject).omit(mask as Record<string, true> & Record<number, never>);
    } catch {
      rest = null; // a schema with refinements cannot drop fields
    }
    bySchema.set(names, rest);
  }
  if (!rest) return null;
  const parsed = rest.safeParse(value);
  if (!parsed.success) return null;
  const data = parsed.data as Record<string, unknown>;
  for (const [key, valid] of fields) data[key] = valid;
  return { data: data as T };
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
  if (issue.code === "unrecognized_keys") {
    // A mistyped field is refused, never dropped; its name is the client's, so shown bounded.
    const shown = issue.keys.slice(0, 5).map((key) =>
      [...path.map(String), key.length > 64 ? `${key.slice(0, 64)}…` : key].join(".")
    );
    const more = issue.keys.length > 5 ? ` (and ${issue.keys.length - 5} more)` : "";
    return `unknown field${issue.keys.length > 1 ? "s" : ""} ${shown.join(", ")}${more}`;
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
 * import { InvalidRequestError } from "../lib/errors/mod.ts";
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

/**
 * An error's answer, counted once by its code, and the headers that ask its client to come back
 * (none unless its code's row says so).
 */
function counted(
  error: unknown,
  options: ErrorOptions,
): { answer: ErrorAnswer; retryHeaders: Record<string, string> } {
  const answer = describeError(error);
  options.metrics?.errors.inc(answer.code);
  return { answer, retryHeaders: answer.retry ? retryHeaders(options) : {} };
}

/** The status, error type, message and extra headers of an error's HTTP response. */
export function classifyError(
  error: unknown,
  options: ErrorOptions,
): { status: number; type: ErrorType; message: string; headers?: Record<string, string> } {
  const { answer: { status, type, message, retry }, retryHeaders: headers } = counted(
    error,
    options,
  );
  return retry ? { status, type, message, headers } : { status, type, message };
}

/**
 * The HTTP response for an error, in `envelope`: the answer's status, the body and headers the
 * envelope makes of it (a protocol's envelope, from its folder in `lib/`, or the gateway's own).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SessionNotFoundError } from "../lib/session/mod.ts";
 * import { envelopedResponse } from "./_http.ts";
 * const response = envelopedResponse(
 *   new SessionNotFoundError("s1"),
 *   "req_1",
 *   { retryAfterMs: 1_000 },
 *   ({ code, message, requestId }) => ({ body: { code, message }, headers: { "request-id": requestId } }),
 * );
 * assert.equal(response.status, 404);
 * assert.equal(response.headers.get("request-id"), "req_1");
 * assert.deepEqual(await response.json(), {
 *   code: "session_not_found",
 *   message: 'Session "s1" not found',
 * });
 * ```
 */
export function envelopedResponse(
  error: unknown,
  requestId: string,
  options: ErrorOptions,
  envelope: EnvelopeOf,
): Response {
  const { answer, retryHeaders } = counted(error, options);
  const { body, headers } = envelope({ ...answer, error, requestId, retryHeaders });
  return Response.json(body, { status: answer.status, headers });
}

/**
 * The HTTP response for an error in the gateway's envelope (`gatewayErrorEnvelope`, Anthropic's
 * shape): the answer of every route that is not an OpenAI protocol.
 */
export function errorResponse(error: unknown, requestId: string, options: ErrorOptions): Response {
  return envelopedResponse(error, requestId, options, gatewayErrorEnvelope);
}
