/**
 * Bad requests to `/v1/messages` get Anthropic-shaped errors with the right status, and write
 * nothing to KV.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { kvSnapshot, startGateway, type TestGateway } from "../_gateway.ts";

const VALID = { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] };

async function post(gw: TestGateway, body: BodyInit, headers: Record<string, string>) {
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { response, body: await response.json() };
}

/** Asserts the Anthropic error envelope, its status and type, and that KV did not change. */
async function expectError(
  gw: TestGateway,
  request: { body: BodyInit; headers: Record<string, string> },
  status: number,
  type: string,
  message: RegExp,
) {
  const before = await kvSnapshot(gw.kv);
  const { response, body } = await post(gw, request.body, request.headers);
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.type, "error");
  assert.equal(body.error.type, type);
  assert.match(body.error.message, message);
  assert.match(body.request_id, /^req_[0-9a-f]{32}$/);
  assert.equal(response.headers.get("request-id"), body.request_id);
  assert.deepEqual(await kvSnapshot(gw.kv), before);
  assert.equal(gw.engine.calls.length, 0);
}

Deno.test("/v1/messages rejects bad requests with Anthropic errors and leaves KV unchanged", async (t) => {
  const gw = await startGateway({ env: { MAX_BODY_BYTES: "4096", IMAGE_POLICY: "reject" } });
  const { id, token } = await gw.openSession();
  const auth = { "x-api-key": token };
  try {
    await t.step(
      "invalid JSON → 400",
      () =>
        expectError(
          gw,
          { body: '{"model": "m",', headers: auth },
          400,
          "invalid_request_error",
          /not valid JSON/,
        ),
    );
    await t.step("missing max_tokens → 400 naming the field", () =>
      expectError(
        gw,
        { body: JSON.stringify({ model: "m", messages: VALID.messages }), headers: auth },
        400,
        "invalid_request_error",
        /^max_tokens: /,
      ));
    await t.step("unknown block type → 400 with its path", () =>
      expectError(
        gw,
        {
          body: JSON.stringify({
            ...VALID,
            messages: [{ role: "user", content: [{ type: "hologram", data: "x" }] }],
          }),
          headers: auth,
        },
        400,
        "invalid_request_error",
        /^messages\.0\.content\.0/,
      ));
    await t.step("an image the text model cannot read → 400", () =>
      expectError(
        gw,
        {
          body: JSON.stringify({
            ...VALID,
            messages: [{
              role: "user",
              content: [{
                type: "image",
                source: { type: "base64", media_type: "image/png", data: "AA==" },
              }],
            }],
          }),
          headers: auth,
        },
        400,
        "invalid_request_error",
        /messages\.0\.content\.0: image blocks are not supported/,
      ));
    await t.step("an assistant prefill → 400", () =>
      expectError(
        gw,
        {
          body: JSON.stringify({
            ...VALID,
            messages: [...VALID.messages, { role: "assistant", content: "Sure" }],
          }),
          headers: auth,
        },
        400,
        "invalid_request_error",
        /prefill is not supported/,
      ));
    await t.step(
      "no token → 401",
      () =>
        expectError(
          gw,
          { body: JSON.stringify(VALID), headers: {} },
          401,
          "authentication_error",
          /Missing session token/,
        ),
    );
    await t.step("a wrong secret for a real session → 401", () =>
      expectError(
        gw,
        {
          body: JSON.stringify(VALID),
          headers: { authorization: `Bearer ${id}.${"0".repeat(48)}` },
        },
        401,
        "authentication_error",
        /Invalid session token/,
      ));
    await t.step(
      "a token that is no session token → 401",
      () =>
        expectError(
          gw,
          { body: JSON.stringify(VALID), headers: { "x-api-key": "not a token" } },
          401,
          "authentication_error",
          /Invalid/,
        ),
    );
    await t.step("a token naming an unknown session → 404", () =>
      expectError(
        gw,
        { body: JSON.stringify(VALID), headers: { "x-api-key": `sess_missing.${"a".repeat(48)}` } },
        404,
        "not_found_error",
        /Session "sess_missing" not found/,
      ));
    await t.step("a body over MAX_BODY_BYTES → 413", () =>
      expectError(
        gw,
        {
          body: JSON.stringify({
            ...VALID,
            messages: [{ role: "user", content: "x".repeat(8000) }],
          }),
          headers: auth,
        },
        413,
        "request_too_large",
        /larger than 4096 bytes/,
      ));
    await t.step("a streamed body over MAX_BODY_BYTES (no content-length) → 413", async () => {
      const chunks = [
        new TextEncoder().encode(JSON.stringify({ ...VALID, pad: "y".repeat(8000) })),
      ];
      await expectError(
        gw,
        { body: ReadableStream.from(chunks), headers: auth },
        413,
        "request_too_large",
        /larger than/,
      );
    });
  } finally {
    await gw.close();
  }
});

Deno.test("/v1/messages errors reach the Anthropic SDK as its typed errors", async () => {
  const gw = await startGateway();
  try {
    const { token } = await gw.openSession();
    const wrong = gw.anthropic(`${token.split(".")[0]}.${"f".repeat(48)}`);
    await assert.rejects(wrong.messages.create(VALID as never), Anthropic.AuthenticationError);
    const client = gw.anthropic(token);
    await assert.rejects(
      client.messages.create(
        { ...VALID, messages: [{ role: "user", content: [{ type: "bogus" }] }] } as never,
      ),
      Anthropic.BadRequestError,
    );
  } finally {
    await gw.close();
  }
});
