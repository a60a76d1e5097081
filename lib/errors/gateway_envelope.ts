/**
 * The gateway's own error envelope, which is Anthropic's shape: `{type: "error", error: {type,
 * message}, request_id}` with the `request-id` header. Every JSON route that is not an OpenAI
 * protocol answers in it (the admin API, sessions, rollouts, the edge's misses; the viewer shows
 * its errors as pages), and the Messages API does, since it is Anthropic's.
 *
 * @module
 */
import type { ErrorType } from "./codes.ts";
import type { ErrorEnvelope, ErrorReply } from "./envelope.ts";

/** The body of an error response in the gateway's envelope. */
export interface GatewayErrorBody {
  type: "error";
  error: { type: ErrorType; message: string };
  request_id: string;
}

/**
 * The body of the gateway's envelope.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gatewayErrorBody } from "./gateway_envelope.ts";
 * assert.deepEqual(gatewayErrorBody("not_found_error", 'Session "s1" not found', "req_1"), {
 *   type: "error",
 *   error: { type: "not_found_error", message: 'Session "s1" not found' },
 *   request_id: "req_1",
 * });
 * ```
 */
export function gatewayErrorBody(
  type: ErrorType,
  message: string,
  requestId: string,
): GatewayErrorBody {
  return { type: "error", error: { type, message }, request_id: requestId };
}

/**
 * An error in the gateway's envelope: the body, the `request-id` header and the retry headers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gatewayErrorEnvelope } from "./gateway_envelope.ts";
 * const envelope = gatewayErrorEnvelope({
 *   code: "lease_timeout",
 *   status: 529,
 *   type: "overloaded_error",
 *   message: "busy",
 *   retry: true,
 *   error: null,
 *   requestId: "req_1",
 *   retryHeaders: { "x-should-retry": "true" },
 * });
 * assert.deepEqual(envelope, {
 *   body: { type: "error", error: { type: "overloaded_error", message: "busy" }, request_id: "req_1" },
 *   headers: { "request-id": "req_1", "x-should-retry": "true" },
 * });
 * ```
 */
export function gatewayErrorEnvelope(reply: ErrorReply): ErrorEnvelope {
  return {
    body: gatewayErrorBody(reply.type, reply.message, reply.requestId),
    headers: { "request-id": reply.requestId, ...reply.retryHeaders },
  };
}
