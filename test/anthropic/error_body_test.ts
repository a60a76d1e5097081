/** The Messages API answers errors in the gateway's envelope, which is Anthropic's shape. */
import assert from "node:assert/strict";
import { messagesErrorEnvelope } from "../../lib/anthropic/mod.ts";
import { gatewayErrorEnvelope } from "../../lib/errors/mod.ts";

Deno.test("messagesErrorEnvelope() is the gateway's envelope: Anthropic's body, request-id and the retry headers", () => {
  assert.equal(messagesErrorEnvelope, gatewayErrorEnvelope);
  const envelope = messagesErrorEnvelope({
    code: "engine_unavailable",
    status: 529,
    type: "overloaded_error",
    message: "engine down",
    retry: true,
    error: null,
    requestId: "req_1",
    retryHeaders: { "x-should-retry": "true", "retry-after": "2", "retry-after-ms": "1500" },
  });
  assert.deepEqual(envelope, {
    body: {
      type: "error",
      error: { type: "overloaded_error", message: "engine down" },
      request_id: "req_1",
    },
    headers: {
      "request-id": "req_1",
      "x-should-retry": "true",
      "retry-after": "2",
      "retry-after-ms": "1500",
    },
  });
});
