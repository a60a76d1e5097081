/**
 * The trainer API of this slice: open a session, read its samples; admin token only.
 */
import assert from "node:assert/strict";
import { ADMIN_TOKEN, kvSnapshot, startGateway } from "../_gateway.ts";

Deno.test("POST /sessions opens a session whose token the agent can use", async () => {
  const gw = await startGateway({ script: ["hello"] });
  try {
    const response = await fetch(`${gw.url}/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ id: "run-7", metadata: { task: "demo" } }),
    });
    assert.equal(response.status, 201);
    const opened = await response.json();
    assert.equal(opened.id, "run-7");
    assert.match(opened.token, /^run-7\.[0-9a-f]{48}$/);
    const stored =
      (await gw.kv.get<{ tokenDigest: string; metadata: unknown }>(["session", "run-7"])).value!;
    assert.deepEqual(stored.metadata, { task: "demo" });
    assert.ok(
      !JSON.stringify(stored).includes(opened.token.split(".")[1]),
      "the secret is not stored",
    );
    const turn = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${opened.token}` },
      body: JSON.stringify({
        model: "m",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    assert.equal(turn.status, 200);
    await turn.body?.cancel();
    assert.equal((await gw.samples("run-7")).length, 1);
  } finally {
    await gw.close();
  }
});

Deno.test("the trainer API refuses missing, wrong and session tokens, unknown ids and bad bodies", async (t) => {
  const gw = await startGateway();
  try {
    const { token } = await gw.openSession();
    const call = async (path: string, init: RequestInit, status: number, type: string) => {
      const before = await kvSnapshot(gw.kv);
      const response = await fetch(`${gw.url}${path}`, init);
      const body = await response.json();
      assert.equal(response.status, status, JSON.stringify(body));
      assert.equal(body.type, "error");
      assert.equal(body.error.type, type);
      assert.deepEqual(await kvSnapshot(gw.kv), before);
    };
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    await t.step(
      "no token → 401",
      () => call("/sessions", { method: "POST", body: "{}" }, 401, "authentication_error"),
    );
    await t.step(
      "wrong token → 401",
      () =>
        call(
          "/sessions",
          { method: "POST", body: "{}", headers: { authorization: "Bearer nope-nope-nope-nope" } },
          401,
          "authentication_error",
        ),
    );
    await t.step(
      "a session token → 403",
      () =>
        call(
          "/sessions",
          { method: "POST", body: "{}", headers: { authorization: `Bearer ${token}` } },
          403,
          "permission_error",
        ),
    );
    await t.step(
      "a session token reading samples → 403",
      () =>
        call(
          `/sessions/${token.split(".")[0]}/samples`,
          { headers: { authorization: `Bearer ${token}` } },
          403,
          "permission_error",
        ),
    );
    await t.step(
      "unknown session → 404",
      () => call("/sessions/sess_none/samples", { headers: admin }, 404, "not_found_error"),
    );
    await t.step(
      "bad JSON → 400",
      () =>
        call(
          "/sessions",
          { method: "POST", body: "{", headers: admin },
          400,
          "invalid_request_error",
        ),
    );
    await t.step(
      "bad id → 400",
      () =>
        call(
          "/sessions",
          { method: "POST", body: JSON.stringify({ id: "no spaces" }), headers: admin },
          400,
          "invalid_request_error",
        ),
    );
    await t.step("duplicate id → 409", async () => {
      const first = await fetch(`${gw.url}/sessions`, {
        method: "POST",
        body: JSON.stringify({ id: "dup" }),
        headers: admin,
      });
      assert.equal(first.status, 201);
      await first.body?.cancel();
      await call(
        "/sessions",
        { method: "POST", body: JSON.stringify({ id: "dup" }), headers: admin },
        409,
        "conflict_error",
      );
    });
  } finally {
    await gw.close();
  }
});
