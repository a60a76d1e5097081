/**
 * The standing fuzz test: thousands of mutated requests to every route — built from the zod
 * schemas and from the requests the real Claude Code CLI sent — through `app.request()`, and a
 * few hundred over the gateway's real socket. No response may be a 5xx; every error is
 * Anthropic's envelope with its status; the gateway keeps serving; and a session recorded
 * before the fuzzing exports byte for byte the same afterwards.
 *
 * Seeded: the same cases every run unless `FUZZ_SEED` names another seed (or `random`); a
 * failure prints its `FUZZ_SEED=…` and the failing request. `FUZZ_CASES` and `FUZZ_HTTP_CASES`
 * change how many are sent.
 */
import assert from "node:assert/strict";
import { ADMIN_HEADERS, ADMIN_TOKEN, startGateway, type TestGateway } from "../_gateway.ts";
import type { FuzzWorld } from "../_fuzz/case.ts";
import { loadRecorded } from "../_fuzz/message_bases.ts";
import { classify, describeFinding } from "../_fuzz/check.ts";
import { runSeed } from "../_fuzz/prng.ts";
import { runCases, Tally } from "../_fuzz/run.ts";

const CASES = Number(Deno.env.get("FUZZ_CASES") ?? 4_000);
const HTTP_CASES = Number(Deno.env.get("FUZZ_HTTP_CASES") ?? 300);
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Replies of the scripted engine during the fuzzing: text, reasoning, a tool call. */
const REPLIES = [
  "Done.",
  "<think>\nChecking.\n</think>\n\nAll good.",
  '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>',
  "<tool_call>\nnot json\n</tool_call>",
];

/** The untouched session's episode: a tool call, its result, and a sub-agent's turn. */
async function recordUntouched(gw: TestGateway): Promise<{ id: string; token: string }> {
  const opened = await fetch(`${gw.url}/sessions`, {
    method: "POST",
    headers: ADMIN_HEADERS,
    body: JSON.stringify({ id: "untouched_session", metadata: { task: "kept", n: 1 } }),
  });
  assert.equal(opened.status, 201);
  const { id, token } = await opened.json();
  const tools = [{ name: "Bash", input_schema: { type: "object" } }];
  const turn = async (messages: unknown[], headers: Record<string, string> = {}) => {
    const response = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, ...headers },
      body: JSON.stringify({ model: "qwen3", max_tokens: 64, system: "Fix it.", tools, messages }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    return (await response.json()).content;
  };
  gw.engine.setScript([
    '<tool_call>\n{"name": "Bash", "arguments": {"command": "pytest"}}\n</tool_call>',
    "<think>\nThe tests pass.\n</think>\n\nFixed.",
    "Sub-agent report: <|im_end|> is text.",
  ]);
  const ask = { role: "user", content: "Fix the failing test." };
  const first = await turn([ask]);
  const result = { type: "tool_result", tool_use_id: first[0].id, content: "1 passed" };
  await turn([ask, { role: "assistant", content: first }, { role: "user", content: [result] }]);
  await turn([{ role: "user", content: "Sub-task: report." }], { "x-claude-code-agent-id": "a1" });
  const reward = await fetch(`${gw.url}/sessions/${id}/reward`, {
    method: "POST",
    headers: ADMIN_HEADERS,
    body: JSON.stringify({ score: 1, tests: { passed: ["t"], failed: [] } }),
  });
  assert.equal(reward.status, 200);
  return { id, token };
}

/** Every export of a session, as the exact bytes the trainer API answers. */
async function exports(gw: TestGateway, id: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (
    const query of [
      "",
      "/samples?format=raw",
      "/samples",
      "/samples?format=slime",
      "/samples?format=verl",
      "/samples?format=jsonl&include_side=true",
    ]
  ) {
    const response = await fetch(`${gw.url}/sessions/${id}${query}`, { headers: ADMIN_HEADERS });
    out[query || "view"] = `${response.status} ${await response.text()}`;
  }
  return out;
}

Deno.test("thousands of fuzzed requests to every route get no 5xx, errors in the envelope, and leave other sessions byte-identical", async (t) => {
  const seed = runSeed();
  console.log(`fuzz: seed ${seed} (FUZZ_SEED=${seed} replays these cases)`);
  const gw = await startGateway({
    script: (call) => REPLIES[call.inputIds.length % REPLIES.length],
    env: {
      MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      LOCK_WAIT_MS: "100",
      EVAL_TIMEOUT_MS: "5000",
      ROLLOUT_WORKER: "false",
    },
  });
  const started = performance.now();
  try {
    const untouched = await recordUntouched(gw);
    const before = await exports(gw, untouched.id);
    gw.engine.setScript((call) => REPLIES[call.inputIds.length % REPLIES.length]);
    const world: FuzzWorld = {
      adminToken: ADMIN_TOKEN,
      sessions: [],
      closed: new Set(),
      untouched,
      jobIds: [],
      groupIds: [],
      cursors: [],
      lastTurn: null,
      maxBodyBytes: MAX_BODY_BYTES,
    };
    const recorded = await loadRecorded();
    const tally = new Tally();
    const options = { seed, maxEvaluations: 8 };
    await runCases(gw, world, recorded, tally, { ...options, from: 0, count: CASES, http: false });
    const inProcess = performance.now() - started;
    await runCases(gw, world, recorded, tally, {
      ...options,
      from: CASES,
      count: HTTP_CASES,
      http: true,
    });
    console.log(tally.summary("fuzz"));
    console.log(
      `fuzz: ${CASES} in process, ${HTTP_CASES} over HTTP in ${
        Math.round(performance.now() - started)
      } ms ` +
        `(in process ${Math.round(inProcess)} ms); ${tally.evaluations} evaluations run, ` +
        `${tally.skipped} valid ones over the budget skipped`,
    );
    for (const [endpoint, row] of [...tally.byEndpoint].sort()) {
      const ms = Math.round(tally.msByEndpoint.get(endpoint) ?? 0);
      console.log(
        `  ${endpoint}: ${
          [...row].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(" ")
        } (${ms} ms)`,
      );
    }

    await t.step("no response is a 5xx, a crash, or an error outside the envelope", () => {
      const failures = tally.findings.filter((finding) => finding.kind !== "style");
      const classes = classify(tally.findings);
      for (const [name, findings] of classes) {
        console.log(`\n${findings.length}× ${name}\n${describeFinding(seed, findings[0])}`);
      }
      assert.equal(
        failures.length,
        0,
        `${failures.length} bad responses in ${classes.size} classes (FUZZ_SEED=${seed})`,
      );
    });

    await t.step("the gateway keeps serving over its socket", async () => {
      const hello = await fetch(`${gw.url}/api/hello`, { method: "HEAD" });
      assert.equal(hello.status, 200);
      const { token } = await gw.openSession({ after: "fuzz" });
      const response = await fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": token },
        body: JSON.stringify({
          model: "qwen3",
          max_tokens: 16,
          messages: [{ role: "user", content: "Still there?" }],
        }),
      });
      assert.equal(response.status, 200, await response.clone().text());
      assert.equal((await response.json()).type, "message");
      const listed = await fetch(`${gw.url}/sessions?limit=1000`, { headers: ADMIN_HEADERS });
      assert.equal(listed.status, 200);
      assert.ok((await listed.json()).sessions.length > 0);
    });

    await t.step("the session recorded before the fuzzing exports byte-identical", async () => {
      const after = await exports(gw, untouched.id);
      for (const [name, text] of Object.entries(before)) {
        assert.ok(text.startsWith("200 "), `${name}: ${text.slice(0, 200)}`);
        assert.equal(after[name], text, `${name} changed`);
      }
    });
  } finally {
    await gw.close();
  }
});
