/**
 * `GET /metrics` on a real gateway, parsed by a real Prometheus text parser: the admin token
 * guards it, and a scripted episode (the Anthropic SDK against the scripted engine) moves the
 * counters by exactly its turns, tokens, flags, replays, rewinds, aborts and resumes. A rollout
 * group's tool turns appear once its jobs are done.
 */
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { startRetailEnv } from "../../fixtures/retail_env.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../_gateway.ts";
import { countable, moved, type Parsed, parseExposition } from "../_prometheus.ts";
import { retailScript } from "../rollout/_retail.ts";
import { awaitJob, submit } from "../rollout/_rollout.ts";

const TOOLS: Anthropic.Tool[] = [{
  name: "Bash",
  description: "Run a shell command.",
  input_schema: {
    type: "object" as const,
    properties: { command: { type: "string" } },
    required: ["command"],
  },
}];

const call = (command: string) =>
  `<think>\nRun ${command}.\n</think>\n\n<tool_call>\n{"name": "Bash", "arguments": {"command": "${command}"}}\n</tool_call>`;
/** A tool call whose arguments never close: the reply carries it as text, flagged ill_formed. */
const BROKEN = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"\n</tool_call>';

/** GET /metrics with `token`. */
function get(gw: TestGateway, token: string | null): Promise<Response> {
  return gw.fetch("/metrics", {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
}

/** A scrape with the admin token: its text, and the text parsed. */
async function scrapeText(gw: TestGateway): Promise<{ text: string; parsed: Parsed }> {
  const response = await get(gw, ADMIN_TOKEN);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return { text, parsed: await parseExposition(text) };
}

/** A scrape with the admin token, parsed. */
async function scrape(gw: TestGateway): Promise<Parsed> {
  return (await scrapeText(gw)).parsed;
}

Deno.test("GET /metrics answers 401 without the admin token or with a wrong one, 403 with a session token", async () => {
  const gw = await startGateway();
  try {
    const { token } = await gw.openSession();
    for (
      const [credential, status, type] of [
        [null, 401, "authentication_error"],
        ["not-the-admin-token-at-all", 401, "authentication_error"],
        [token, 403, "permission_error"],
      ] as const
    ) {
      const response = await get(gw, credential);
      assert.equal(response.status, status);
      assert.equal((await response.json()).error.type, type);
    }
  } finally {
    await gw.close();
  }
});

Deno.test("a scripted episode moves the counters by exactly its turns, tokens, flags, replays, rewinds, aborts and resumes", async () => {
  const gw = await startGateway();
  try {
    const tok = gw.tokenizer;
    const second = tok.encode(call("cat a"));
    gw.engine.setScript([
      call("ls"),
      // The second turn is aborted after 3 tokens (a weight update) and resumed with the rest.
      { tokens: second },
      { tokens: second.slice(3) },
      `Trying.\n${BROKEN}`,
      "Done.",
    ]);
    const { token } = await gw.openSession();
    const client = gw.anthropic(token);
    const ask = (messages: Anthropic.MessageParam[], extra: { temperature?: number } = {}) =>
      client.messages.create({ model: "m", max_tokens: 256, tools: TOOLS, messages, ...extra });
    const toolResult = (reply: Anthropic.Message, content: string): Anthropic.MessageParam => ({
      role: "user",
      content: reply.content.flatMap((block) =>
        block.type === "tool_use" ? [{ type: "tool_result", tool_use_id: block.id, content }] : []
      ),
    });

    const before = countable(await scrape(gw));
    const first: Anthropic.MessageParam[] = [{ role: "user", content: "Look around." }];
    const r1 = await ask(first);
    const secondRequest = [...first, { role: "assistant" as const, content: r1.content }, {
      ...toolResult(r1, "a b"),
    }];
    gw.engine.fault({ kind: "abort", after: 3 });
    const r2 = await client.messages.stream({
      model: "m",
      max_tokens: 256,
      tools: TOOLS,
      messages: secondRequest,
    }).finalMessage();
    const thirdRequest = [...secondRequest, { role: "assistant" as const, content: r2.content }, {
      ...toolResult(r2, "alpha"),
    }];
    const r3 = await ask(thirdRequest);
    assert.deepEqual(r3.content, [{ type: "text", text: `Trying.\n${BROKEN}` }]);
    // A retry of the second request: answered from its recorded turn.
    assert.deepEqual((await ask(secondRequest)).content, r2.content);
    // The third request again with another temperature: the chain rewinds to before it.
    assert.deepEqual((await ask(thirdRequest, { temperature: 0.7 })).content, [{
      type: "text",
      text: "Done.",
    }]);
    // A scrape without the token is refused, and counted.
    assert.equal((await get(gw, null)).status, 401);
    const after = countable(await scrape(gw));

    const calls = gw.engine.calls;
    assert.equal(calls.length, 5, "four turns generated, one of them resumed");
    const resumed = calls[2];
    const prompts = calls.filter((c) => c !== resumed).map((c) => c.inputIds.length);
    const sampled = calls.map((c) => c.output!.length);
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    // The engine's prefix cache: each turn's first call reuses the longest prefix an earlier
    // call's prompt + output gave it (all but the prompt's last token at most).
    const shared = (a: number[], b: number[]) => {
      let n = 0;
      while (n < a.length && n < b.length && a[n] === b[n]) n++;
      return n;
    };
    const cached = calls.filter((c) => c !== resumed).map((c) =>
      Math.max(
        0,
        ...calls.slice(0, calls.indexOf(c)).map((earlier) =>
          Math.min(
            shared([...earlier.inputIds, ...earlier.output!], c.inputIds),
            c.inputIds.length - 1,
          )
        ),
      )
    );
    assert.ok(sum(cached) > 0, "later turns found their prefix cached");
    assert.deepEqual(moved(before, after), {
      'rollout_gateway_turns_total{host="test-host",route="start",worker="0"}': 1,
      'rollout_gateway_turns_total{host="test-host",route="append",worker="0"}': 2,
      'rollout_gateway_turns_total{host="test-host",route="replay",worker="0"}': 1,
      'rollout_gateway_turns_total{host="test-host",route="rewind",worker="0"}': 1,
      'rollout_gateway_prompt_tokens_total{host="test-host",worker="0"}': sum(prompts),
      'rollout_gateway_cached_tokens_total{host="test-host",worker="0"}': sum(cached),
      'rollout_gateway_sampled_tokens_total{host="test-host",worker="0"}': sum(sampled),
      'rollout_gateway_turn_flags_total{flag="engine_aborted",host="test-host",worker="0"}': 1,
      'rollout_gateway_turn_flags_total{flag="ill_formed",host="test-host",worker="0"}': 1,
      'rollout_gateway_engine_aborts_total{host="test-host",worker="0"}': 1,
      'rollout_gateway_engine_resumes_total{host="test-host",worker="0"}': 1,
      'rollout_gateway_engine_seconds_count{host="test-host",worker="0"}': 4,
      'rollout_gateway_gateway_seconds_count{host="test-host",worker="0"}': 4,
      'rollout_gateway_errors_total{code="authentication",host="test-host",worker="0"}': 1,
    });
  } finally {
    await gw.close();
  }
});

Deno.test("the exposition names every metric once, with its help and type, and every series of the catalogue from the start", async () => {
  const gw = await startGateway();
  try {
    const { text, parsed } = await scrapeText(gw);
    const typed = [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]);
    assert.equal(new Set(typed).size, typed.length, "no family twice");
    assert.deepEqual(typed.sort(), Object.keys(parsed).sort());
    const turns = parsed["rollout_gateway_turns_total"];
    assert.equal(turns.type, "counter");
    assert.match(turns.help, /^Turns answered, by how the request was routed/);
    assert.deepEqual(
      turns.data.map((series) => series.labels),
      ["append", "replay", "rewind", "realign", "resume", "start", "wipe", "subagent", "side"]
        .map((route) => ({ host: "test-host", worker: "0", route })),
    );
    const engine = parsed["rollout_gateway_engine_seconds"];
    assert.equal(engine.type, "histogram");
    assert.deepEqual(engine.data, [{
      labels: { host: "test-host", worker: "0" },
      buckets: Object.fromEntries(
        ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60"]
          .concat(["120", "300", "+Inf"]).map((le) => [le, 0]),
      ),
      count: 0,
      sum: 0,
    }]);
    const [start] = parsed["rollout_gateway_start_time_seconds"].data as { value: number }[];
    assert.ok(Math.abs(start.value - Date.now() / 1000) < 600, `start time ${start.value}`);
    assert.deepEqual(parsed["rollout_gateway_group_tool_turns"].data, []);
  } finally {
    await gw.close();
  }
});

Deno.test("a rollout group's tool turns appear once its jobs are done, and its jobs' phases are counted", async () => {
  const gw = await startGateway({ script: retailScript, worker: true });
  const env = await startRetailEnv();
  try {
    const before = countable(await scrape(gw));
    const { group_id, jobs } = await submit(gw, {
      task: { environment: env.url, task_index: 0 },
      agent: { harness: "env_loop", max_steps: 10 },
      n: 2,
    });
    for (const { id } of jobs) assert.equal((await awaitJob(gw, id)).phase, "done");
    const parsed = await scrape(gw);
    const rollout = Object.fromEntries(
      Object.entries(moved(before, countable(parsed))).filter(([id]) =>
        id.startsWith("rollout_gateway_rollout_") || id.startsWith("rollout_gateway_group_")
      ),
    );
    // Each sample: find the user, look up the order, cancel it (three tool turns of six).
    assert.deepEqual(rollout, {
      'rollout_gateway_rollout_jobs_total{host="test-host",phase="queued",worker="0"}': 2,
      'rollout_gateway_rollout_jobs_total{host="test-host",phase="booting",worker="0"}': 2,
      'rollout_gateway_rollout_jobs_total{host="test-host",phase="agent",worker="0"}': 2,
      'rollout_gateway_rollout_jobs_total{host="test-host",phase="done",worker="0"}': 2,
      [`rollout_gateway_group_tool_turns{group="${group_id}",stat="max"}`]: 3,
      [`rollout_gateway_group_tool_turns{group="${group_id}",stat="mean"}`]: 3,
      [`rollout_gateway_group_tool_turns{group="${group_id}",stat="min"}`]: 3,
    });
    assert.deepEqual(parsed["rollout_gateway_rollout_jobs_running"].data, [{
      labels: { host: "test-host", worker: "0" },
      value: 0,
    }]);
  } finally {
    await env.close();
    await gw.close();
  }
});
