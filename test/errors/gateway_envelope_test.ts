/**
 * The gateway's own error envelope (Anthropic's shape), which every route outside the OpenAI
 * protocols answers in.
 */
import assert from "node:assert/strict";
import { type ErrorReply, gatewayErrorEnvelope } from "../../lib/errors/mod.ts";
import { SessionNotFoundError } from "../../lib/session/mod.ts";

const NOT_FOUND: ErrorReply = {
  code: "session_not_found",
  status: 404,
  type: "not_found_error",
  message: 'Session "s1" not found',
  retry: false,
  error: new SessionNotFoundError("s1"),
  requestId: "req_1",
  retryHeaders: {},
};

Deno.test("gatewayErrorEnvelope() answers with the type, message and request id, and the request-id header", () => {
  assert.deepEqual(gatewayErrorEnvelope(NOT_FOUND), {
    body: {
      type: "error",
      error: { type: "not_found_error", message: 'Session "s1" not found' },
      request_id: "req_1",
    },
    headers: { "request-id": "req_1" },
  });
});

Deno.test("gatewayErrorEnvelope() adds the retry headers to a retryable answer, its body unchanged", () => {
  const busy: ErrorReply = {
    ...NOT_FOUND,
    code: "lease_timeout",
    status: 529,
    type: "overloaded_error",
    message: "busy",
    retry: true,
    retryHeaders: { "x-should-retry": "true", "retry-after": "8", "retry-after-ms": "7500" },
  };
  assert.deepEqual(gatewayErrorEnvelope(busy), {
    body: {
      type: "error",
      error: { type: "overloaded_error", message: "busy" },
      request_id: "req_1",
    },
    headers: {
      "request-id": "req_1",
      "x-should-retry": "true",
      "retry-after": "8",
      "retry-after-ms": "7500",
    },
  });
});
