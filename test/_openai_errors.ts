/**
 * Asserting an error in OpenAI's envelope: the status, `{error: {message, type, param, code}}`,
 * the `x-request-id` header, KV unchanged and the engine not called.
 *
 * @module
 */
import assert from "node:assert/strict";
import { kvSnapshot, type TestGateway } from "./_gateway.ts";

/** What the error must be. */
export interface ExpectedError {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly message: RegExp;
  /** The field the message names; unchecked when left out. */
  readonly param?: string | null;
}

/** A 400 `invalid_request_error` whose message matches `message`. */
export const bad = (message: RegExp, param?: string | null): ExpectedError => ({
  status: 400,
  type: "invalid_request_error",
  code: "invalid_request",
  message,
  param,
});

/** Posts `body` (JSON, or text as written) to `path` and asserts the error and that KV did not change. */
export async function expectOpenAIError(
  gw: TestGateway,
  path: string,
  token: string | null,
  body: unknown,
  expected: ExpectedError,
): Promise<void> {
  const before = await kvSnapshot(gw.kv);
  const response = await gw.fetch(path, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const json = await response.json();
  assert.equal(response.status, expected.status, JSON.stringify(json));
  assert.deepEqual(Object.keys(json), ["error"]);
  assert.deepEqual(Object.keys(json.error).sort(), ["code", "message", "param", "type"]);
  assert.equal(json.error.type, expected.type);
  assert.equal(json.error.code, expected.code);
  assert.match(json.error.message, expected.message);
  if (expected.param !== undefined) assert.equal(json.error.param, expected.param);
  assert.match(response.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{32}$/);
  assert.deepEqual(await kvSnapshot(gw.kv), before, "KV unchanged");
  assert.equal(gw.engine.calls.length, 0, "the engine was not called");
}

/**
 * The refusals every OpenAI route shares, as steps of `t`: `oversized` over the gateway's
 * `MAX_BODY_BYTES` of 8192 → 413, and `body` without a token → 401; both writing nothing.
 */
export async function expectSizeAndTokenRefusals(
  t: Deno.TestContext,
  gw: TestGateway,
  path: string,
  token: string,
  bodies: { oversized: unknown; body: unknown },
): Promise<void> {
  await t.step(
    "a body over MAX_BODY_BYTES → 413",
    () =>
      expectOpenAIError(gw, path, token, bodies.oversized, {
        status: 413,
        type: "invalid_request_error",
        code: "body_too_large",
        message: /larger than 8192 bytes/,
      }),
  );
  await t.step("no token → 401", () =>
    expectOpenAIError(gw, path, null, bodies.body, {
      status: 401,
      type: "authentication_error",
      code: "authentication",
      message: /./,
    }));
}
