/**
 * OpenAI's error envelope: `{error: {message, type, param, code}}` with the request id under both
 * names, the retry headers, and a prompt over the window worded as OpenAI words it.
 */
import assert from "node:assert/strict";
import type { ErrorReply } from "../../lib/errors/mod.ts";
import { openaiErrorEnvelope, openaiReplyHeaders } from "../../lib/openai/mod.ts";
import { ContextOverflowError } from "../../lib/session/mod.ts";

const INVALID: ErrorReply = {
  code: "invalid_request",
  status: 400,
  type: "invalid_request_error",
  message: "n: only n = 1 is served",
  retry: false,
  error: null,
  requestId: "req_1",
  retryHeaders: {},
};

Deno.test("openaiReplyHeaders() names the request id as request-id and x-request-id", () => {
  assert.deepEqual(openaiReplyHeaders("req_1"), { "request-id": "req_1", "x-request-id": "req_1" });
});

Deno.test("openaiErrorEnvelope() answers with the message, OpenAI's type, the path as param and the code", () => {
  assert.deepEqual(openaiErrorEnvelope(INVALID), {
    body: {
      error: {
        message: "n: only n = 1 is served",
        type: "invalid_request_error",
        param: "n",
        code: "invalid_request",
      },
    },
    headers: { "request-id": "req_1", "x-request-id": "req_1" },
  });
});

Deno.test("openaiErrorEnvelope() names server-side types server_error and adds the retry headers", () => {
  const busy: ErrorReply = {
    ...INVALID,
    code: "engine_unavailable",
    status: 529,
    type: "overloaded_error",
    message: "engine down",
    retry: true,
    retryHeaders: { "x-should-retry": "true", "retry-after": "2", "retry-after-ms": "1500" },
  };
  assert.deepEqual(openaiErrorEnvelope(busy), {
    body: {
      error: {
        message: "engine down",
        type: "server_error",
        param: null,
        code: "engine_unavailable",
      },
    },
    headers: {
      "request-id": "req_1",
      "x-request-id": "req_1",
      "x-should-retry": "true",
      "retry-after": "2",
      "retry-after-ms": "1500",
    },
  });
});

Deno.test("openaiErrorEnvelope() words a prompt over the window as OpenAI does, coded context_length_exceeded", () => {
  const error = new ContextOverflowError(5000, 4096);
  const overflow: ErrorReply = {
    ...INVALID,
    code: "context_overflow",
    message: error.message,
    error,
  };
  assert.deepEqual(openaiErrorEnvelope(overflow), {
    body: {
      error: {
        message: "This model's maximum context length is 4096 tokens. However, your messages " +
          "resulted in 5000 tokens (one token must be left to generate). Please reduce the " +
          "length of the messages.",
        type: "invalid_request_error",
        param: null,
        code: "context_length_exceeded",
      },
    },
    headers: { "request-id": "req_1", "x-request-id": "req_1" },
  });
});
