/**
 * What an error tells its client, whichever protocol answers it, and what a protocol's error
 * envelope makes of that: the body and headers of its answer. Each protocol owns its envelope
 * (the gateway's own JSON envelope is `gateway_envelope.ts`); the HTTP plumbing only finds the
 * answer (`ERROR_TABLE`) and turns an envelope into a response.
 *
 * @module
 */
import type { ErrorCode, ErrorType } from "./codes.ts";

/** What an error tells its client: its code's row in `ERROR_TABLE`, and its message. */
export interface ErrorAnswer {
  readonly code: ErrorCode;
  /** The HTTP status the answer travels with. */
  readonly status: number;
  readonly type: ErrorType;
  /** What the client is told ("Internal error" for an error not raised on purpose). */
  readonly message: string;
  /** The client should come back later (`x-should-retry`, `retry-after`, `retry-after-ms`). */
  readonly retry: boolean;
}

/** An error being answered to one request: what an error envelope is built from. */
export interface ErrorReply extends ErrorAnswer {
  /** The value thrown: a protocol may word an error its own way (OpenAI's context overflow). */
  readonly error: unknown;
  /** The request's id, as its `request-id` header and some bodies carry it. */
  readonly requestId: string;
  /** The headers that ask the client to come back later: empty unless {@linkcode retry}. */
  readonly retryHeaders: Readonly<Record<string, string>>;
}

/** An error in one protocol's envelope: its answer's JSON body and headers (the status is the answer's). */
export interface ErrorEnvelope {
  /** The JSON body. */
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * A protocol's error envelope: the body and headers it answers an error with.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { EnvelopeOf } from "./envelope.ts";
 * const plain: EnvelopeOf = ({ message, requestId, retryHeaders }) => ({
 *   body: { message },
 *   headers: { "request-id": requestId, ...retryHeaders },
 * });
 * const reply = {
 *   code: "session_not_found" as const,
 *   status: 404,
 *   type: "not_found_error" as const,
 *   message: 'Session "s1" not found',
 *   retry: false,
 *   error: null,
 *   requestId: "req_1",
 *   retryHeaders: {},
 * };
 * assert.deepEqual(plain(reply), {
 *   body: { message: 'Session "s1" not found' },
 *   headers: { "request-id": "req_1" },
 * });
 * ```
 */
export type EnvelopeOf = (reply: ErrorReply) => ErrorEnvelope;
