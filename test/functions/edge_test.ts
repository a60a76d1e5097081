/**
 * The gateway's front door over a real socket (`functions/_edge.ts`): paths sent as written, with
 * dot segments a client's `fetch` would have resolved; bodies cut off or never sent; and the
 * smaller findings of issue 47 — JSON 404s under the per-session base URL, `max_tokens: 0` writing
 * nothing, the viewer's `next=`, one credential rule, sealed cursors, agent ids as characters.
 * No answer is a 500, nothing counts as `internal`, nothing is logged as unexpected.
 */
import assert from "node:assert/strict";
import {
  ADMIN_HEADERS,
  ADMIN_TOKEN,
  kvSnapshot,
  startGateway,
  type TestGateway,
} from "../_gateway.ts";
import { nonZero } from "../_prometheus.ts";
import { MAX_AGENT_ID_CHARS } from "../../lib/limits/mod.ts";
import { pollUntil } from "../../lib/timing/mod.ts";

/** The gateway's app on a socket of its own, as `serve.ts` serves it (no test harness between). */
function serveRaw(gw: TestGateway): { port: number; close(): Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, gw.app.fetch);
  return { port: server.addr.port, close: () => server.shutdown() };
}

/** What the server answered on a connection, and how long it took. */
interface Wire {
  readonly text: string;
  readonly status: number;
  readonly body: string;
  /** Milliseconds from the last byte written until the answer was whole. */
  readonly answeredAfterMs: number;
}

/**
 * Writes `head` (and `body`) to a new connection as they are, optionally closing it at once;
 * then reads the answer until it is whole (its `content-length`) or the server closes the
 * connection, failing after `waitMs`.
 */
async function exchange(
  port: number,
  head: string,
  options: { body?: string; hangUp?: boolean; waitMs?: number } = {},
): Promise<Wire> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(head + (options.body ?? "")));
    if (options.hangUp) return { text: "", status: 0, body: "", answeredAfterMs: 0 };
    const sent = performance.now();
    let text = "";
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(65536);
    const deadline = setTimeout(() => conn.close(), options.waitMs ?? 10_000);
    try {
      for (;;) {
        const n = await conn.read(buffer).catch(() => null);
        if (n === null) break;
        text += decoder.decode(buffer.subarray(0, n), { stream: true });
        const end = text.indexOf("\r\n\r\n");
        const length = text.slice(0, end).match(/\r\ncontent-length: (\d+)/i);
        if (
          end >= 0 && length &&
          new TextEncoder().encode(text.slice(end + 4)).length >= Number(length[1])
        ) break;
      }
    } finally {
      clearTimeout(deadline);
    }
    const answeredAfterMs = performance.now() - sent;
    const status = Number(text.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? 0);
    return { text, status, body: text.slice(text.indexOf("\r\n\r\n") + 4), answeredAfterMs };
  } finally {
    try {
      conn.close();
    } catch { /* closed already */ }
  }
}

/** A request head as written, closing the connection after its answer. */
const head = (method: string, path: string, headers: Record<string, string> = {}) =>
  `${method} ${path} HTTP/1.1\r\nhost: gw\r\nconnection: close\r\n` +
  Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") + "\r\n";

/** Runs `body` with `console.error` recorded; returns what was logged. */
async function logged(body: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  try {
    await body();
  } finally {
    console.error = original;
  }
  return lines;
}

/** The errors counted by code. */
const errorCounts = (gw: TestGateway) =>
  Object.fromEntries(
    Object.entries(nonZero(gw.deps.metrics))
      .filter(([id]) => id.startsWith("rollout_gateway_errors_total"))
      .map(([id, value]) => [id.match(/code="(\w+)"/)![1], value]),
  );

const MESSAGE = (agent = "hi") =>
  JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: agent }] });

Deno.test("paths sent as written with dot segments are normalised before any route or token: no 500", async () => {
  const gw = await startGateway({ script: () => "Done." });
  const raw = serveRaw(gw);
  try {
    const a = await gw.openSession();
    const b = await gw.openSession();
    const logs = await logged(async () => {
      for (
        const path of [
          `/sessions/${a.token}/v1/..`,
          `/sessions/${a.token}/v1/%2e%2e/%2e%2e`,
          `/sessions/${a.token}/v1/%2E%2e`,
          "/sessions/x/v1/..",
          "/v1/../../..",
        ]
      ) {
        const wire = await exchange(raw.port, head("GET", path));
        assert.ok(wire.status >= 400 && wire.status < 500, `${path}: ${wire.text}`);
        const body = JSON.parse(wire.body);
        assert.equal(body.type, "error", path);
        assert.match(body.request_id, /^req_/, path);
      }
    });
    assert.deepEqual(logs, []);
    // A path through one session's base URL into another's is the other's, routed and
    // authenticated alike: the token that routed it is the one checked.
    const post = (path: string) =>
      exchange(
        raw.port,
        head("POST", path, {
          "content-type": "application/json",
          "content-length": String(MESSAGE().length),
        }),
        { body: MESSAGE() },
      );
    const into = await post(`/sessions/${a.token}/v1/../../not-a-token/v1/messages`);
    assert.equal(into.status, 401, into.text);
    const across = await post(`/sessions/not-a-token/v1/../../${b.token}/v1/messages`);
    assert.equal(across.status, 200, across.text);
    const turns = async (id: string) =>
      (await gw.session(id)).chains.map((chain: { turns: number }) => chain.turns);
    assert.deepEqual(await turns(b.id), [1]);
    assert.deepEqual(await turns(a.id), []);
    const counts = errorCounts(gw);
    assert.equal(counts.internal, undefined, JSON.stringify(counts));
  } finally {
    await raw.close();
    await gw.close();
  }
});

Deno.test("a client that hangs up mid-body is counted as client_disconnected, never logged as a bug, on every route that reads a body", async () => {
  const gw = await startGateway({ script: () => "Done." });
  const raw = serveRaw(gw);
  try {
    const { id, token } = await gw.openSession();
    const routes: [string, Record<string, string>][] = [
      ["/v1/messages", { "x-api-key": token }],
      ["/v1/chat/completions", { authorization: `Bearer ${token}` }],
      ["/v1/responses", { authorization: `Bearer ${token}` }],
      ["/v1/messages/count_tokens", { "x-api-key": token }],
      [`/sessions/${token}/v1/messages`, {}],
      ["/ui/login", { "content-type": "application/x-www-form-urlencoded" }],
      ["/sessions", ADMIN_HEADERS],
      [`/sessions/${id}/reward`, ADMIN_HEADERS],
      ["/evaluate", ADMIN_HEADERS],
      ["/rollout", ADMIN_HEADERS],
      ["/engine/pause", ADMIN_HEADERS],
    ];
    const logs = await logged(async () => {
      for (const [path, headers] of routes) {
        const disconnected = () => errorCounts(gw).client_disconnected ?? 0;
        const before = disconnected();
        await exchange(raw.port, head("POST", path, { ...headers, "content-length": "1000" }), {
          body: '{"model": "m", "messages": [',
          hangUp: true,
        });
        // The gateway sees the hang-up when it reads the body: it is counted then.
        const counted = await pollUntil(() => disconnected() === before + 1, {
          timeoutMs: 10_000,
          intervalMs: 5,
        });
        assert.ok(counted, `${path}: the disconnect was never counted`);
      }
    });
    assert.deepEqual(logs.filter((line) => /Unexpected error/.test(line)), []);
    const counts = errorCounts(gw);
    assert.equal(counts.client_disconnected, routes.length, JSON.stringify(counts));
    assert.equal(counts.internal, undefined, JSON.stringify(counts));
  } finally {
    await raw.close();
    await gw.close();
  }
});

Deno.test("a body that never arrives is answered 408 at BODY_TIMEOUT_MS, counted, never logged", async () => {
  const timeoutMs = 300;
  const gw = await startGateway({ env: { BODY_TIMEOUT_MS: String(timeoutMs) } });
  const raw = serveRaw(gw);
  try {
    const { token } = await gw.openSession();
    const cases: [string, Record<string, string>, string][] = [
      ["/v1/messages", { "x-api-key": token, "content-length": "5000" }, '{"model":'],
      [
        "/v1/messages",
        { "x-api-key": token, "transfer-encoding": "chunked" },
        '9\r\n{"model":\r\n',
      ],
      ["/ui/login", { "content-length": "100" }, "token="],
      ["/sessions", { ...ADMIN_HEADERS, "content-length": "100" }, ""],
    ];
    const logs = await logged(async () => {
      for (const [path, headers, body] of cases) {
        const wire = await exchange(raw.port, head("POST", path, headers), { body });
        assert.equal(wire.status, 408, `${path}: ${wire.text}`);
        // Not before the deadline, and soon after it (the server drains the socket until the
        // client closes it: docs/api.md).
        assert.match(wire.text, /\r\nconnection: close\r\n/i, path);
        const after = wire.answeredAfterMs;
        assert.ok(after >= timeoutMs - 50 && after < timeoutMs + 5_000, `${path}: ${after} ms`);
        if (path !== "/ui/login") {
          const error = JSON.parse(wire.body);
          assert.equal(error.error.type, "request_timeout");
          assert.equal(error.error.message, `Request body did not arrive within ${timeoutMs} ms`);
        }
      }
    });
    assert.deepEqual(logs.filter((line) => /Unexpected error/.test(line)), []);
    const counts = errorCounts(gw);
    assert.equal(counts.body_timeout, cases.length, JSON.stringify(counts));
    assert.equal(counts.internal, undefined);
    // A body that does come is read as ever.
    const whole = await exchange(
      raw.port,
      head("POST", "/v1/messages", {
        "x-api-key": token,
        "content-length": String(MESSAGE().length),
      }),
      { body: MESSAGE() },
    );
    assert.equal(whole.status, 200, whole.text);
  } finally {
    await raw.close();
    await gw.close();
  }
});

Deno.test("under the per-session base URL, an unknown path or method is a 404 in the JSON envelope", async () => {
  const gw = await startGateway();
  try {
    const { token } = await gw.openSession();
    for (
      const [method, path] of [
        ["GET", `/sessions/${token}/v1/nope`],
        ["PUT", `/sessions/${token}/v1/messages`],
        ["GET", "/v1/nope"],
      ]
    ) {
      const response = await gw.fetch(path, { method });
      assert.equal(response.status, 404, `${method} ${path}`);
      assert.match(response.headers.get("content-type") ?? "", /application\/json/);
      const body = await response.json();
      assert.equal(body.type, "error");
      assert.equal(body.error.type, "not_found_error");
      assert.match(body.request_id, /^req_/);
      assert.ok(!body.error.message.includes(token), "the token is never echoed");
    }
  } finally {
    await gw.close();
  }
});

Deno.test("a request for max_tokens 0 from a new agent writes nothing, and counts what its turn will read", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    const body = (maxTokens: number) =>
      JSON.stringify({
        model: "m",
        max_tokens: maxTokens,
        system: "You are a sub-agent.",
        messages: [{ role: "user", content: "Report." }],
      });
    const send = (maxTokens: number, agent: string) =>
      gw.fetch("/v1/messages", {
        method: "POST",
        headers: { "x-api-key": token, "x-claude-code-agent-id": agent },
        body: body(maxTokens),
      });
    const before = await kvSnapshot(gw.kv);
    for (let i = 0; i < 5; i++) {
      const probe = await send(0, `agent-${i}`);
      assert.equal(probe.status, 200);
      assert.deepEqual((await probe.json()).content, []);
    }
    assert.deepEqual(await kvSnapshot(gw.kv), before, "no chain, no lease, nothing");
    assert.deepEqual((await gw.session(id)).chains, []);
    const probe = await (await send(0, "agent-0")).json();
    const turn = await (await send(8, "agent-0")).json();
    assert.equal(probe.usage.input_tokens, turn.usage.input_tokens);
    assert.equal(gw.engine.calls.at(-1)!.inputIds.length, turn.usage.input_tokens);
    assert.equal((await gw.session(id)).chains.length, 1);
  } finally {
    await gw.close();
  }
});

Deno.test("the viewer's login goes on to viewer paths only, dot segments resolved", async () => {
  const gw = await startGateway();
  try {
    const cases: [string, string][] = [
      ["/ui/../sessions", "/ui"],
      ["/ui/%2e%2e/sessions", "/ui"],
      ["/ui/./sessions/s1", "/ui/sessions/s1"],
      ["/ui/sessions/../rollouts?x=1", "/ui/rollouts?x=1"],
      ["/ui?limit=5", "/ui?limit=5"],
    ];
    for (const [next, location] of cases) {
      const response = await gw.fetch(`/ui/login?next=${encodeURIComponent(next)}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `token=${ADMIN_TOKEN}`,
      });
      assert.equal(response.status, 303, next);
      assert.equal(response.headers.get("location"), location, next);
    }
  } finally {
    await gw.close();
  }
});

Deno.test("one credential rule: admin routes read Authorization only; an agent's two headers must agree", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { token } = await gw.openSession();
    const list = (headers: Record<string, string>) => gw.fetch("/sessions", { headers });
    // The admin token as x-api-key is not read on admin routes; a junk x-api-key beside the
    // admin bearer token is not read either.
    const asApiKey = await list({ "x-api-key": ADMIN_TOKEN });
    assert.equal(asApiKey.status, 401);
    assert.match((await asApiKey.json()).error.message, /Authorization: Bearer/);
    const junk = await list({ authorization: `Bearer ${ADMIN_TOKEN}`, "x-api-key": "junk" });
    assert.equal(junk.status, 200);
    await junk.body?.cancel();
    // An agent's x-api-key and bearer token: either, both when they agree, never two.
    const turn = (headers: Record<string, string>) =>
      gw.fetch("/v1/messages", { method: "POST", headers, body: MESSAGE() });
    const agreeing: Record<string, string>[] = [
      { "x-api-key": token },
      { authorization: `Bearer ${token}` },
      { "x-api-key": token, authorization: `Bearer ${token}` },
    ];
    for (const headers of agreeing) {
      const response = await turn(headers);
      assert.equal(response.status, 200, JSON.stringify(Object.keys(headers)));
      await response.body?.cancel();
    }
    const two = await turn({ "x-api-key": token, authorization: "Bearer something-else-1234" });
    assert.equal(two.status, 401);
    assert.match((await two.json()).error.message, /x-api-key and Authorization carry different/);
    // /v1/models takes a session or the admin token, as an agent's credential.
    const models = await gw.fetch("/v1/models", { headers: { "x-api-key": ADMIN_TOKEN } });
    assert.equal(models.status, 200);
    await models.body?.cancel();
  } finally {
    await gw.close();
  }
});

Deno.test("agent ids are UTF-8 text bounded in characters, stored as written", async () => {
  const gw = await startGateway({ script: () => "Done." });
  const raw = serveRaw(gw);
  try {
    const { id, token } = await gw.openSession();
    const send = (agent: string) =>
      exchange(
        raw.port,
        head("POST", "/v1/messages", {
          "x-api-key": token,
          "x-claude-code-agent-id": agent,
          "content-length": String(MESSAGE().length),
        }),
        { body: MESSAGE() },
      );
    const accented = "é".repeat(MAX_AGENT_ID_CHARS);
    const accepted = await send(accented);
    assert.equal(accepted.status, 200, accepted.text);
    const chains = (await gw.session(id)).chains;
    assert.deepEqual(chains.map((chain: { agent_id: string }) => chain.agent_id), [accented]);
    const over = await send("é".repeat(MAX_AGENT_ID_CHARS + 1));
    assert.equal(over.status, 400);
    assert.equal(
      JSON.parse(over.body).error.message,
      `x-claude-code-agent-id: ${MAX_AGENT_ID_CHARS + 1} characters, at most ${MAX_AGENT_ID_CHARS}`,
    );
    // Bytes that are not UTF-8 (a Latin-1 client's `é`).
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: raw.port });
    const bytes = new Uint8Array([
      ...new TextEncoder().encode(
        head("POST", "/v1/messages", {
          "x-api-key": token,
          "content-length": String(MESSAGE().length),
        }).slice(0, -2) + "x-claude-code-agent-id: caf",
      ),
      0xe9,
      ...new TextEncoder().encode("\r\n\r\n" + MESSAGE()),
    ]);
    await conn.write(bytes);
    const answer = new TextDecoder().decode(
      new Uint8Array(await new Response(conn.readable).arrayBuffer()),
    );
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(answer, /x-claude-code-agent-id: not UTF-8 text/);
    assert.equal((await gw.session(id)).chains.length, 1);
  } finally {
    await raw.close();
    await gw.close();
  }
});
