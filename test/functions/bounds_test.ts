/**
 * Every client value the gateway stores is bounded where it enters: past a bound, a 400 naming
 * the field and its limit, and KV unchanged. What grows with an episode (agents, chains, a large
 * reward) never lands in one KV value, so a session can always be rewarded.
 */
import assert from "node:assert/strict";
import {
  MAX_AGENT_ID_CHARS,
  MAX_CHAINS_PER_SESSION,
  MAX_JSON_DEPTH,
  MAX_METADATA_BYTES,
  MAX_MODEL_CHARS,
  MAX_REWARD_BYTES,
  MAX_TOOL_NAME_CHARS,
  MAX_TOOLS,
} from "../../lib/limits/mod.ts";
import { keys } from "../../lib/kv/mod.ts";
import type { SessionRecord } from "../../lib/session/mod.ts";
import { ADMIN_HEADERS, kvSnapshot, startGateway, type TestGateway } from "../_gateway.ts";

function messages(
  gw: TestGateway,
  token: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token, ...headers },
    body: JSON.stringify({
      model: "qwen3",
      max_tokens: 32,
      messages: [{ role: "user", content: "Hello" }],
      ...body,
    }),
  });
}

/** Asserts a 400 invalid_request_error whose message matches `pattern`. */
async function assertRefused(response: Response, pattern: RegExp): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 400, text);
  const body = JSON.parse(text);
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "invalid_request_error");
  assert.match(body.error.message, pattern);
}

const tools = (count: number, prefix = "tool") =>
  Array.from({ length: count }, (_, i) => ({ name: `${prefix}_${i}`, input_schema: {} }));

Deno.test("oversized agent ids, model names, tool lists and tool names are refused with 400 naming the limit", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { token } = await gw.openSession();
    const before = await kvSnapshot(gw.kv);
    const long = "a".repeat(MAX_AGENT_ID_CHARS + 1);
    await assertRefused(
      await messages(gw, token, {}, { "x-claude-code-agent-id": long }),
      new RegExp(
        `^x-claude-code-agent-id: ${long.length} characters, at most ${MAX_AGENT_ID_CHARS}$`,
      ),
    );
    await assertRefused(
      await messages(gw, token, {}, { "x-claude-code-parent-agent-id": long }),
      /^x-claude-code-parent-agent-id: /,
    );
    await assertRefused(
      await messages(gw, token, { model: "m".repeat(MAX_MODEL_CHARS + 1) }),
      new RegExp(`^model: .*${MAX_MODEL_CHARS}`),
    );
    await assertRefused(
      await messages(gw, token, { tools: tools(MAX_TOOLS + 1) }),
      new RegExp(`^tools: .*${MAX_TOOLS}`),
    );
    await assertRefused(
      await messages(gw, token, { tools: [{ name: "t".repeat(MAX_TOOL_NAME_CHARS + 1) }] }),
      new RegExp(`^tools\\.0\\.name: .*${MAX_TOOL_NAME_CHARS}`),
    );
    assert.deepEqual(await kvSnapshot(gw.kv), before);
    assert.equal(gw.engine.calls.length, 0);
  } finally {
    await gw.close();
  }
});

Deno.test("a chain keeps the tools its last request offered: replacing all of them is served, the chain's record bounded", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    const history: unknown[] = [{ role: "user", content: "Hello" }];
    const first = await messages(gw, token, { messages: history, tools: tools(MAX_TOOLS) });
    assert.equal(first.status, 200);
    history.push({ role: "assistant", content: (await first.json()).content });
    history.push({ role: "user", content: "More" });
    const second = await messages(gw, token, { messages: history, tools: tools(1, "extra") });
    assert.equal(second.status, 200, await second.clone().text());
    const chain = await gw.kv.get<{ tools: string[]; turnCount: number }>(keys.chain(id, "c0"));
    assert.equal(chain.value?.turnCount, 2);
    assert.deepEqual(chain.value?.tools, ["extra_0"]);
    // The model was told which went, by name, and what came.
    const delta = gw.tokenizer.decode(
      gw.engine.calls[1].inputIds.slice(gw.engine.calls[0].inputIds.length),
    );
    assert.match(delta, /These tools are no longer available: "tool_0", "tool_1", /);
    assert.match(delta, /"tool_255"\. Do not call them\.\nThese tools are available from now on:/);
  } finally {
    await gw.close();
  }
});

Deno.test("many long agent ids leave the session rewardable, and a large reward round-trips", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    const agents = Array.from({ length: 40 }, (_, i) => `${i}-`.padEnd(MAX_AGENT_ID_CHARS, "x"));
    for (const agent of agents) {
      const response = await messages(gw, token, {}, { "x-claude-code-agent-id": agent });
      assert.equal(response.status, 200);
      await response.body?.cancel();
    }
    // An evaluation of a large suite: thousands of test names as evidence (~400 KB).
    const names = (n: number) =>
      Array.from(
        { length: n },
        (_, i) => `tests/test_module_${i % 97}.py::TestCase::test_case_${i}`,
      );
    const reward = { score: 0.5, tests: { passed: names(5000), failed: names(300) } };
    const set = await gw.fetch(`/sessions/${id}/reward`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify(reward),
    });
    assert.equal(set.status, 200, await set.clone().text());
    assert.deepEqual((await gw.session(id)).reward, reward);
    const samples = await gw.fetch(`/sessions/${id}/samples?format=slime`, {
      headers: ADMIN_HEADERS,
    });
    const slime = (await samples.json()).samples;
    assert.equal(slime.length, 40);
    assert.deepEqual(slime[0].metadata.reward_payload, reward);
    assert.equal(slime[0].reward, 0.5 / 40);
    // Set again, small: the large one's blob goes.
    const small = await gw.fetch(`/sessions/${id}/reward`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ score: 1 }),
    });
    assert.equal(small.status, 200);
    assert.deepEqual((await gw.session(id)).reward, { score: 1 });
    const blobs = [];
    for await (const entry of gw.kv.list({ prefix: keys.rewardBlobs(id) })) blobs.push(entry.key);
    assert.deepEqual(blobs, []);
  } finally {
    await gw.close();
  }
});

Deno.test("oversized metadata and rewards are refused with 400 naming the limit, writing nothing", async () => {
  const gw = await startGateway();
  try {
    const { id } = await gw.openSession();
    const before = await kvSnapshot(gw.kv);
    const post = (path: string, body: unknown) =>
      gw.fetch(path, {
        method: "POST",
        headers: ADMIN_HEADERS,
        body: JSON.stringify(body),
      });
    await assertRefused(
      await post("/sessions", { metadata: { blob: "x".repeat(MAX_METADATA_BYTES) } }),
      new RegExp(`^metadata: \\d+ bytes of JSON, at most ${MAX_METADATA_BYTES}$`),
    );
    await assertRefused(
      await post("/sessions", { metadata: { ["k".repeat(300)]: 1 } }),
      /^metadata: key "k+…" has 300 characters, at most 256$/,
    );
    await assertRefused(
      await post(`/sessions/${id}/reward`, { score: 1, log: "x".repeat(MAX_REWARD_BYTES) }),
      new RegExp(`^reward: \\d+ bytes of JSON, at most ${MAX_REWARD_BYTES}$`),
    );
    assert.deepEqual(await kvSnapshot(gw.kv), before);
  } finally {
    await gw.close();
  }
});

Deno.test("a session holding the most chains refuses a request that would start another", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    const history: unknown[] = [{ role: "user", content: "Hello" }];
    const first = await messages(gw, token, { messages: history }, {
      "x-claude-code-agent-id": "a1",
    });
    assert.equal(first.status, 200);
    history.push({ role: "assistant", content: (await first.json()).content });
    history.push({ role: "user", content: "Again" });
    // Stand in for a thousand registered chains: the bound reads the session's chain count.
    const entry = await gw.kv.get<SessionRecord>(keys.session(id));
    await gw.kv.set(keys.session(id), { ...entry.value!, chainCount: MAX_CHAINS_PER_SESSION });
    const before = await kvSnapshot(gw.kv);
    await assertRefused(
      await messages(gw, token, {}, { "x-claude-code-agent-id": "a2" }),
      new RegExp(`holds ${MAX_CHAINS_PER_SESSION} chains, the most a session may hold`),
    );
    assert.deepEqual(await kvSnapshot(gw.kv), before);
    // Existing chains keep working.
    const again = await messages(gw, token, { messages: history }, {
      "x-claude-code-agent-id": "a1",
    });
    assert.equal(again.status, 200);
  } finally {
    await gw.close();
  }
});

Deno.test("JSON nested past the bound is refused with 400 wherever it is, writing nothing", async () => {
  const gw = await startGateway({ script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    const before = await kvSnapshot(gw.kv);
    const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels);
    const send = (path: string, body: string, auth: Record<string, string>) =>
      gw.fetch(path, { method: "POST", headers: auth, body });
    const session = { "x-api-key": token };
    const cases: [string, string, Record<string, string>, RegExp][] = [
      [
        "/v1/messages",
        `{"model":"q","max_tokens":8,"messages":[{"role":"user","content":"hi","x":${
          deep(5000)
        }}]}`,
        session,
        /^messages\.0\.x\.0\.0\.0\.0\.0\.…\.0\.0: nested deeper than 128 levels$/,
      ],
      [
        "/v1/messages",
        `{"model":"q","max_tokens":8,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"a":${
          deep(100_000)
        }}}]},{"role":"user","content":"go"}]}`,
        session,
        /nested deeper than 128 levels$/,
      ],
      ["/sessions", `{"metadata":{"a":${deep(MAX_JSON_DEPTH)}}}`, ADMIN_HEADERS, /nested deeper/],
      [`/sessions/${id}/reward`, `{"score":1,"evidence":${deep(20_000)}}`, ADMIN_HEADERS, /nested/],
    ];
    for (const [path, body, headers, pattern] of cases) {
      await assertRefused(await send(path, body, headers), pattern);
    }
    assert.deepEqual(await kvSnapshot(gw.kv), before);
    // At the bound itself a value is accepted.
    const atBound = await send(
      "/sessions",
      `{"metadata":{"a":${deep(MAX_JSON_DEPTH - 2)}}}`,
      ADMIN_HEADERS,
    );
    assert.equal(atBound.status, 201, await atBound.clone().text());
  } finally {
    await gw.close();
  }
});

Deno.test("a cursor that is not one a listing handed out is refused with 400", async () => {
  const gw = await startGateway();
  try {
    for (let i = 0; i < 3; i++) await gw.openSession();
    const first = await (await gw.fetch("/sessions?limit=1", { headers: ADMIN_HEADERS })).json();
    const handed = first.next_cursor as string;
    const [kvCursor, mac] = handed.split(".");
    const second = await gw.fetch(`/sessions?limit=1&cursor=${handed}`, { headers: ADMIN_HEADERS });
    assert.equal(second.status, 200, "the cursor a listing handed out is good");
    const edited = `${kvCursor}A.${mac}`;
    const other = gw.deps.cursors.seal("rollout_groups", kvCursor)!;
    const bad = [
      "garbage",
      "%%%",
      "AmEAx",
      "AQID",
      "AQID.AAAAAAAAAAAAAAAAAAAAAA",
      kvCursor,
      edited,
    ];
    for (const cursor of [...bad, other, "A".repeat(3000), "€uro"]) {
      const response = await gw.fetch(
        `/sessions?cursor=${encodeURIComponent(cursor)}`,
        { headers: ADMIN_HEADERS },
      );
      // Malformed ones at the edge; well-formed ones whose seal is not this listing's own.
      await assertRefused(
        response,
        /^(Invalid cursor ".*": pass the next_cursor of an earlier page|cursor: (not a cursor a listing handed out|Too big: .*2760 characters(; cursor: not a cursor a listing handed out)?))$/,
      );
    }
    // The viewer's listings seal theirs too.
    const page = await gw.fetch(`/ui/rollouts?cursor=${handed}`, { headers: ADMIN_HEADERS });
    assert.equal(page.status, 400, "a sessions cursor is not a rollout groups cursor");
    assert.equal(
      (await gw.fetch(`/ui?limit=1&cursor=${handed}`, { headers: ADMIN_HEADERS })).status,
      200,
    );
    await page.body?.cancel();
  } finally {
    await gw.close();
  }
});

Deno.test("a session id no session can have is not found, whatever its length, on every route", async () => {
  const gw = await startGateway();
  try {
    const long = "a".repeat(2100);
    const routes: [string, string, string?][] = [
      ["GET", `/sessions/${long}`],
      ["GET", `/sessions/${long}/samples`],
      ["POST", `/sessions/${long}/close`],
      ["POST", `/sessions/${long}/reward`, '{"score": 1}'],
      ["DELETE", `/sessions/${long}`],
    ];
    for (const [method, path, body] of routes) {
      const response = await gw.fetch(path, { method, headers: ADMIN_HEADERS, body });
      const error = await response.json();
      assert.equal(
        response.status,
        404,
        `${method} ${path.slice(0, 20)}: ${JSON.stringify(error)}`,
      );
      assert.equal(error.error.message, `Session "${"a".repeat(64)}…" not found`);
    }
  } finally {
    await gw.close();
  }
});
