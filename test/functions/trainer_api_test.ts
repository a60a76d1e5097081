/**
 * The trainer API: every endpoint's refusals, and a session's life from open to deletion,
 * with its samples in every export format.
 */
import assert from "node:assert/strict";
import { sweepExpiredSessions } from "../../lib/session/mod.ts";
import { ADMIN_TOKEN, kvSnapshot, startGateway, type TestGateway } from "../_gateway.ts";

const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Every trainer endpoint, on the session `id`, with a valid body where it takes one. */
function endpoints(id: string): { method: string; path: string; body?: string }[] {
  return [
    { method: "POST", path: "/sessions", body: "{}" },
    { method: "GET", path: "/sessions" },
    { method: "GET", path: `/sessions/${id}` },
    { method: "POST", path: `/sessions/${id}/reward`, body: '{"score": 1}' },
    { method: "POST", path: `/sessions/${id}/close` },
    { method: "DELETE", path: `/sessions/${id}` },
    { method: "GET", path: `/sessions/${id}/samples` },
    { method: "GET", path: `/sessions/${id}/samples?format=slime` },
  ];
}

async function expectError(
  gw: TestGateway,
  request: { method: string; path: string; body?: string; headers?: Record<string, string> },
  status: number,
  type: string,
) {
  const before = await kvSnapshot(gw.kv);
  const response = await fetch(`${gw.url}${request.path}`, request);
  const body = await response.json();
  assert.equal(
    response.status,
    status,
    `${request.method} ${request.path}: ${JSON.stringify(body)}`,
  );
  assert.equal(body.type, "error");
  assert.equal(body.error.type, type);
  assert.match(body.request_id, /^req_/);
  assert.deepEqual(await kvSnapshot(gw.kv), before, `${request.method} ${request.path} wrote`);
}

Deno.test("every trainer endpoint refuses bad tokens, unknown ids and malformed bodies, writing nothing", async (t) => {
  const gw = await startGateway();
  try {
    const { id, token } = await gw.openSession();
    for (const endpoint of endpoints(id)) {
      const name = `${endpoint.method} ${endpoint.path}`;
      await t.step(
        `${name}: no token → 401`,
        () => expectError(gw, endpoint, 401, "authentication_error"),
      );
      await t.step(
        `${name}: wrong token → 401`,
        () =>
          expectError(
            gw,
            { ...endpoint, headers: { authorization: "Bearer wrong-wrong-wrong-1" } },
            401,
            "authentication_error",
          ),
      );
      await t.step(
        `${name}: session token → 403`,
        () =>
          expectError(
            gw,
            { ...endpoint, headers: { authorization: `Bearer ${token}` } },
            403,
            "permission_error",
          ),
      );
    }
    for (const endpoint of endpoints("sess_unknown").filter((e) => e.path.includes("unknown"))) {
      await t.step(
        `${endpoint.method} ${endpoint.path}: unknown id → 404`,
        () => expectError(gw, { ...endpoint, headers: ADMIN }, 404, "not_found_error"),
      );
    }
    const malformed = [
      { method: "POST", path: "/sessions", body: "{" },
      { method: "POST", path: "/sessions", body: '{"id": "has space"}' },
      { method: "POST", path: "/sessions", body: '{"metadata": [1]}' },
      { method: "POST", path: `/sessions/${id}/reward`, body: '{"score": "high"}' },
      { method: "POST", path: `/sessions/${id}/reward`, body: '{"passed": true}' },
      { method: "POST", path: `/sessions/${id}/reward`, body: "" },
      { method: "GET", path: "/sessions?limit=0" },
      { method: "GET", path: "/sessions?status=archived" },
      { method: "GET", path: `/sessions/${id}/samples?format=parquet` },
    ];
    for (const request of malformed) {
      await t.step(
        `${request.method} ${request.path} ${request.body ?? ""} → 400`,
        () => expectError(gw, { ...request, headers: ADMIN }, 400, "invalid_request_error"),
      );
    }
  } finally {
    await gw.close();
  }
});

async function admin(gw: TestGateway, method: string, path: string, body?: unknown) {
  const response = await fetch(`${gw.url}${path}`, {
    method,
    headers: ADMIN,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, text };
}

Deno.test("a reward or metadata holding a number JSON cannot show (1e999 parses as Infinity) is refused, naming where it is", async () => {
  const gw = await startGateway();
  try {
    const { id } = await gw.openSession();
    const before = await kvSnapshot(gw.kv);
    const refusals: [string, string, string][] = [
      [
        `/sessions/${id}/reward`,
        '{"score": 1e999}',
        "score: Invalid input: expected number, received Infinity",
      ],
      [
        `/sessions/${id}/reward`,
        '{"score": 1, "loss": 1e999}',
        "loss: expected a finite number, received Infinity",
      ],
      [
        `/sessions/${id}/reward`,
        '{"score": 1, "tests": {"times": [0.5, -1e999]}}',
        "tests.times.1: expected a finite number, received -Infinity",
      ],
      [
        "/sessions",
        '{"metadata": {"budget": {"tokens": 1e999}}}',
        "metadata.budget.tokens: expected a finite number, received Infinity",
      ],
    ];
    const answers = [];
    for (const [path, body] of refusals) {
      const response = await gw.fetch(path, { method: "POST", headers: ADMIN, body });
      const { error } = await response.json();
      answers.push([response.status, error.type, error.message]);
    }
    assert.deepEqual(
      answers,
      refusals.map(([, , message]) => [400, "invalid_request_error", message]),
    );
    assert.deepEqual(await kvSnapshot(gw.kv), before);
    assert.equal((await gw.session(id)).reward, null);
  } finally {
    await gw.close();
  }
});

Deno.test("sessions are listed by status and metadata, a page at a time", async () => {
  const gw = await startGateway();
  try {
    for (const [id, task] of [["a1", "t1"], ["a2", "t2"], ["a3", "t1"], ["a4", "t1"]]) {
      assert.equal(
        (await admin(gw, "POST", "/sessions", { id, metadata: { task, n: 3 } })).status,
        201,
      );
    }
    assert.equal((await admin(gw, "POST", "/sessions/a4/close")).status, 200);
    const all = (await admin(gw, "GET", "/sessions")).body;
    assert.deepEqual(all.sessions.map((s: { id: string }) => s.id), ["a1", "a2", "a3", "a4"]);
    assert.equal(all.next_cursor, null);
    const open =
      (await admin(gw, "GET", "/sessions?status=open&metadata.task=t1&metadata.n=3")).body;
    assert.deepEqual(open.sessions.map((s: { id: string }) => s.id), ["a1", "a3"]);
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `&cursor=${cursor}` : "";
      const page: { sessions: { id: string }[]; next_cursor: string | null } =
        (await admin(gw, "GET", `/sessions?limit=3${query}`)).body;
      assert.ok(page.sessions.length <= 3);
      ids.push(...page.sessions.map((s: { id: string }) => s.id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(ids, ["a1", "a2", "a3", "a4"]);
  } finally {
    await gw.close();
  }
});

Deno.test("a session is rewarded, closed (frozen), exported in every format, and deleted", async () => {
  const tool = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>';
  const gw = await startGateway({ script: [tool, "Done.", "Other."] });
  try {
    const { id, token } = await gw.openSession({ task: "demo" });
    const ask = (messages: unknown[]) =>
      fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": token },
        body: JSON.stringify({
          model: "m",
          max_tokens: 64,
          tools: [{ name: "Bash", input_schema: { type: "object" } }],
          messages,
        }),
      });
    const first = await (await ask([{ role: "user", content: "hi" }])).json();
    const history = [
      { role: "user", content: "hi" },
      { role: "assistant", content: first.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: first.content[0].id, content: "a" }],
      },
    ];
    await (await ask(history)).json();
    // A regenerated last turn: the first version stays in the raw record, discarded.
    await (await ask([...history.slice(0, 2), {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: first.content[0].id, content: "b" }],
    }])).json();

    const rewarded = await admin(gw, "POST", `/sessions/${id}/reward`, {
      score: 0.5,
      tests: { passed: 3 },
    });
    assert.deepEqual(rewarded.body.reward, { score: 0.5, tests: { passed: 3 } });
    const closed = (await admin(gw, "POST", `/sessions/${id}/close`)).body;
    assert.equal(closed.status, "closed");
    assert.ok(Date.parse(closed.expires_at) > Date.parse(closed.closed_at));
    assert.deepEqual(
      closed.chains.map((
        c: { id: string; kind: string; turns: number },
      ) => [c.id, c.kind, c.turns]),
      [
        ["c0", "final", 2],
      ],
    );
    assert.deepEqual(
      (await admin(gw, "POST", `/sessions/${id}/close`)).body,
      closed,
      "closing twice changes nothing",
    );
    const late = await ask(history);
    assert.equal(late.status, 409);
    assert.equal((await late.json()).error.type, "conflict_error");

    const calls = gw.engine.calls;
    const [sample] = (await admin(gw, "GET", `/sessions/${id}/samples`)).body.samples;
    const [slime] = (await admin(gw, "GET", `/sessions/${id}/samples?format=slime`)).body.samples;
    assert.deepEqual(slime.tokens, [...sample.prompt_ids, ...sample.response_ids]);
    assert.equal(slime.response_length, sample.response_ids.length);
    assert.deepEqual(slime.loss_mask, sample.loss_mask);
    assert.deepEqual(slime.rollout_log_probs, sample.logprobs);
    assert.equal(slime.reward, 0.5);
    assert.equal(slime.status, "completed");
    assert.equal(slime.metadata.session_id, id);
    assert.equal(slime.metadata.rollout_id, id, "its old name, kept one release");
    const [verl] = (await admin(gw, "GET", `/sessions/${id}/samples?format=verl`)).body.samples;
    assert.deepEqual(verl.prompt_ids, sample.prompt_ids);
    assert.deepEqual(verl.response_mask, sample.loss_mask);
    assert.deepEqual(verl.response_logprobs, sample.logprobs);
    assert.equal(verl.reward_score, 0.5);
    assert.equal(verl.num_turns, 4);
    assert.equal(verl.metrics.tool_calls, 1);
    const jsonl = await admin(gw, "GET", `/sessions/${id}/samples?format=jsonl`);
    const lines = jsonl.text.trimEnd().split("\n").map((line) => JSON.parse(line));
    assert.equal(lines.length, 1);
    assert.equal(lines[0].prompt_len, sample.prompt_ids.length);
    assert.equal(lines[0].tool_turns, 1);
    assert.match(lines[0].raw_prompt, /<\|im_start\|>user\nhi<\|im_end\|>/);
    const raw = (await admin(gw, "GET", `/sessions/${id}/samples?format=raw`)).body;
    const turns = raw.chains[0].turns;
    assert.deepEqual(turns.map((t: { index: number }) => t.index), [0, 1, 1]);
    assert.equal(turns.filter((t: { discarded: boolean }) => t.discarded).length, 1);
    const discarded = turns.find((t: { discarded: boolean }) => t.discarded);
    assert.equal(discarded.index, 1);
    assert.deepEqual(discarded.tokens.output, calls[1].output);
    assert.ok(
      !sample.response_ids.join(",").includes(calls[1].output!.join(",")),
      "a discarded turn never reaches a sample",
    );

    assert.equal((await admin(gw, "DELETE", `/sessions/${id}`)).status, 204);
    assert.equal((await admin(gw, "GET", `/sessions/${id}`)).status, 404);
    assert.deepEqual((await kvSnapshot(gw.kv)).filter((key) => key.includes(`"${id}"`)), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a closed session is deleted once its retention is over", async () => {
  const gw = await startGateway({ env: { SESSION_RETENTION_MS: "60000" } });
  try {
    const { id } = await gw.openSession();
    const closed = (await admin(gw, "POST", `/sessions/${id}/close`)).body;
    const expiresAt = Date.parse(closed.expires_at);
    assert.equal(expiresAt - Date.parse(closed.closed_at), 60_000);
    assert.equal(await sweepExpiredSessions(gw.kv, expiresAt - 1), 0, "not before its time");
    assert.equal((await admin(gw, "GET", `/sessions/${id}`)).status, 200);
    assert.equal(await sweepExpiredSessions(gw.kv, expiresAt), 1);
    assert.equal((await admin(gw, "GET", `/sessions/${id}`)).status, 404);
    assert.deepEqual((await kvSnapshot(gw.kv)).filter((key) => key.includes(`"${id}"`)), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a close that waits past LOCK_WAIT_MS for a turn in flight is a 529 with the configured RETRY_AFTER_MS", async () => {
  const gw = await startGateway({ env: { LOCK_WAIT_MS: "100", RETRY_AFTER_MS: "7500" } });
  try {
    const { id, token } = await gw.openSession();
    gw.engine.fault({ kind: "hang" });
    const leave = new AbortController();
    const turn = fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      }),
      signal: leave.signal,
    }).catch(() => null);
    while (gw.engine.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const response = await fetch(`${gw.url}/sessions/${id}/close`, {
      method: "POST",
      headers: ADMIN,
    });
    const body = await response.json();
    assert.equal(response.status, 529);
    assert.equal(body.error.type, "overloaded_error");
    assert.deepEqual(
      ["x-should-retry", "retry-after", "retry-after-ms"].map((name) => response.headers.get(name)),
      ["true", "8", "7500"],
    );
    leave.abort();
    await turn;
  } finally {
    await gw.close();
  }
});

Deno.test("an unknown route is a 404 in the error envelope", async () => {
  const gw = await startGateway();
  try {
    const response = await fetch(`${gw.url}/nope`, { headers: ADMIN });
    assert.equal(response.status, 404);
    assert.match(response.headers.get("request-id") ?? "", /^req_/);
    const body = await response.json();
    assert.deepEqual(body.error, { type: "not_found_error", message: "No route for GET /nope" });
  } finally {
    await gw.close();
  }
});
