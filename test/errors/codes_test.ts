/**
 * One table answers every error: each error class the gateway raises carries its code, each code
 * has its status, type and retry headers, and nothing is matched on message text.
 */
import assert from "node:assert/strict";
import { ERROR_STATUS } from "../../lib/anthropic/mod.ts";
import { InvalidRequestError } from "../../lib/errors/mod.ts";
import {
  EngineControlError,
  EngineRejectedError,
  EngineUnavailableError,
  RoutesFormatError,
} from "../../lib/engine/mod.ts";
import { codeOf, ERROR_TABLE } from "../../lib/errors/mod.ts";
import {
  DirNotFoundError,
  HarborTaskError,
  JudgerError,
  TaskInvalidError,
  UnknownJudgerError,
} from "../../lib/evaluate/mod.ts";
import { InvalidCursorError, LeaseTimeoutError, StoreUnavailableError } from "../../lib/kv/mod.ts";
import { LimitError } from "../../lib/limits/mod.ts";
import { JobNotFoundError } from "../../lib/rollout/mod.ts";
import { RoutesNotFoundError } from "../../lib/segment/mod.ts";
import { RepoError, SandboxUnavailableError } from "../../lib/sandbox/mod.ts";
import {
  AuthenticationError,
  ChainConflictError,
  ChainNotFoundError,
  ContextOverflowError,
  ImageNotFoundError,
  InvalidSessionIdError,
  openSession,
  SessionClosedError,
  SessionExistsError,
  SessionNotFoundError,
} from "../../lib/session/mod.ts";
import { TemplateError } from "../../lib/template/mod.ts";
import { ImageRefusedError } from "../../lib/vision/mod.ts";
import {
  BodyTimeoutError,
  BodyTooLargeError,
  classifyError,
  describeError,
  errorResponse,
  PermissionError,
  RouteNotFoundError,
} from "../../functions/_http.ts";

const OPTIONS = { retryAfterMs: 7_500 };

/** One instance of every error class, and how it must be answered. */
const CASES: [Error, number, string][] = [
  [new InvalidRequestError("messages: field required"), 400, "invalid_request_error"],
  [new ContextOverflowError(5000, 4096), 400, "invalid_request_error"],
  [new LimitError("tools", "300, at most 256"), 400, "invalid_request_error"],
  [new InvalidCursorError("zz"), 400, "invalid_request_error"],
  [new InvalidSessionIdError("a b"), 400, "invalid_request_error"],
  [new RepoError("no such commit"), 400, "invalid_request_error"],
  [new UnknownJudgerError("nope", ["tests"]), 400, "invalid_request_error"],
  [new HarborTaskError("task.harbor: /t has no task.toml"), 400, "invalid_request_error"],
  [new EngineRejectedError("bad input_ids"), 400, "invalid_request_error"],
  [new ImageRefusedError("format", "an image is bmp"), 400, "invalid_request_error"],
  [new AuthenticationError("Invalid session token"), 401, "authentication_error"],
  [new PermissionError("admin only"), 403, "permission_error"],
  [new SessionNotFoundError("s1"), 404, "not_found_error"],
  [new JobNotFoundError("job_1"), 404, "not_found_error"],
  [new ChainNotFoundError("s1", "c9"), 404, "not_found_error"],
  [new ImageNotFoundError("s1", "ab"), 404, "not_found_error"],
  [new RoutesNotFoundError("chain c0 recorded no routed experts"), 404, "not_found_error"],
  [new RouteNotFoundError("GET", "/nope"), 404, "not_found_error"],
  [new DirNotFoundError("/srv/nope"), 404, "not_found_error"],
  [
    new TaskInvalidError({
      valid: false,
      problems: ["the tests pass at the base commit"],
      flaky: [],
      flaky_count: 0,
      base: [],
      gold: null,
      gold_source: null,
      digest: "d",
      backend: "local",
      at: 0,
      duration_ms: 1,
    }),
    422,
    "unprocessable_error",
  ],
  [new SessionExistsError("s1"), 409, "conflict_error"],
  [new SessionClosedError("s1"), 409, "conflict_error"],
  [new ChainConflictError("s1", "c0"), 409, "conflict_error"],
  [new BodyTimeoutError(60_000), 408, "request_timeout"],
  [new BodyTooLargeError(1024), 413, "request_too_large"],
  [
    new ImageRefusedError("too_large", "an image is larger than 1024 bytes"),
    413,
    "request_too_large",
  ],
  [new JudgerError("tests", "crashed"), 500, "api_error"],
  [new TemplateError("no end-of-turn token"), 500, "api_error"],
  [new SandboxUnavailableError("bubblewrap missing"), 503, "unavailable_error"],
  [new RoutesFormatError("the engine returned no routed experts"), 503, "unavailable_error"],
  [new StoreUnavailableError(new Error("connection refused")), 503, "unavailable_error"],
  [new EngineControlError([{ url: "http://w1", error: "HTTP 500" }], []), 503, "unavailable_error"],
  [new EngineUnavailableError("engine down"), 529, "overloaded_error"],
  [new LeaseTimeoutError("other", 30_000), 529, "overloaded_error"],
];

Deno.test("every error class carries its code, answered with its status and type", () => {
  for (const [error, status, type] of CASES) {
    const answer = classifyError(error, OPTIONS);
    assert.deepEqual([answer.status, answer.type, answer.message], [status, type, error.message]);
  }
  const codes = new Set(CASES.map(([error]) => codeOf(error)));
  assert.deepEqual(
    Object.keys(ERROR_TABLE).filter((code) => !codes.has(code as keyof typeof ERROR_TABLE)).sort(),
    ["client_disconnected", "internal"],
    "every other code is some class's",
  );
});

Deno.test("each row's status is its type's status in Anthropic's envelope", () => {
  for (const [code, row] of Object.entries(ERROR_TABLE)) {
    assert.equal(row.status, ERROR_STATUS[row.type], code);
  }
});

Deno.test("retryable codes send the configured RETRY_AFTER_MS, and only they", () => {
  for (const [error] of CASES) {
    const { headers } = classifyError(error, OPTIONS);
    if (ERROR_TABLE[codeOf(error)].retry) {
      assert.deepEqual(headers, {
        "x-should-retry": "true",
        "retry-after": "8",
        "retry-after-ms": "7500",
      });
    } else assert.equal(headers, undefined);
  }
});

Deno.test("errorResponse() answers in Anthropic's envelope with the row's status and retry headers", async () => {
  const busy = new LeaseTimeoutError("a turn in flight", 30_000);
  const response = errorResponse(busy, "req_1", OPTIONS);
  assert.equal(response.status, 529);
  assert.equal(response.headers.get("request-id"), "req_1");
  assert.equal(response.headers.get("retry-after-ms"), "7500");
  assert.deepEqual(await response.json(), {
    type: "error",
    error: { type: "overloaded_error", message: busy.message },
    request_id: "req_1",
  });
});

Deno.test("describeError() gives a stream's error event its type from the table", () => {
  assert.deepEqual(describeError(new EngineUnavailableError("engine down")), {
    code: "engine_unavailable",
    status: 529,
    type: "overloaded_error",
    message: "engine down",
    retry: true,
  });
});

Deno.test("the table of codes in docs/api.md matches ERROR_TABLE", async () => {
  const api = await Deno.readTextFile(new URL("../../docs/api.md", import.meta.url));
  const lines = api.split("\n");
  const start = lines.findIndex((line) => /^\| status +\| type +\| codes +\|$/.test(line));
  assert.ok(start >= 0, "docs/api.md has a table of codes");
  const documented: Record<string, { status: number; type: string; retry: boolean }> = {};
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const [status, type, codes] = line.split("|").slice(1, -1).map((cell) => cell.trim());
    for (const [, code] of codes.matchAll(/`(\w+)`/g)) {
      documented[code] = {
        status: Number(status),
        type: type.replaceAll("`", ""),
        retry: codes.endsWith("(retry)"),
      };
    }
  }
  assert.deepEqual(documented, structuredClone(ERROR_TABLE));
});

Deno.test("errors not raised on purpose are a 500 that says nothing of their insides", () => {
  const originalError = console.error;
  console.error = () => {};
  try {
    for (
      const error of [new TypeError("x is undefined"), new RangeError("Invalid session id"), "boom"]
    ) {
      assert.deepEqual(classifyError(error, OPTIONS), {
        status: 500,
        type: "api_error",
        message: "Internal error",
      });
    }
  } finally {
    console.error = originalError;
  }
  assert.equal(
    classifyError(new DOMException("gone", "AbortError"), OPTIONS).message,
    "Client disconnected",
  );
  const forged = Object.assign(new Error("x"), { code: "toString" });
  assert.equal(codeOf(forged), "internal", "a code must be one of the table's own");
});

Deno.test("openSession() refuses a bad id with a coded error", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await assert.rejects(openSession(kv, { id: "no spaces" }), InvalidSessionIdError);
  } finally {
    kv.close();
  }
});
