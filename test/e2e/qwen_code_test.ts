/**
 * The real Qwen Code CLI (pinned in tools/qwen-code), headless and offline with its defaults
 * (memory extraction on), through the gateway and the scripted engine:
 *
 * - it writes a file and runs a command in a temporary git repository, every turn of its main
 *   conversation recorded token for token;
 * - it answers a question at once, after which its memory extractor — a conversation with its
 *   own system prompt and tools, re-sending the agent's — runs: the agent's conversation is the
 *   `final` segment, the extractor's a side chain, and a reward under `final_only` lands on the
 *   agent's sample;
 * - it calls its `agent` tool: the sub-agent's conversation is a `subagent` segment linked to the
 *   call that dispatched it, and the parent resumes in place.
 */
import assert from "node:assert/strict";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { tempRepo } from "../_claude.ts";
import { ADMIN_HEADERS, type SampleJson, startGateway, type TestGateway } from "../_gateway.ts";
import { runQwen } from "../_qwen.ts";
import type { Script } from "../../lib/scripted_engine/mod.ts";
import {
  episodeScript,
  MEMORY_REPLY,
  ONE_ANSWER_PROMPT,
  oneAnswerScript,
  PROMPT,
  SUBAGENT_ANSWER,
  SUBAGENT_PROMPT,
  SUBAGENT_TASK,
  subagentScript,
} from "../../fixtures/qwen_code/episode.ts";

/** Segments with lineage, as the samples export lists them. */
type Segment = SampleJson & {
  lineage: { parent: string | null; dispatch: string | null };
  reward: number | null;
};

/** The session's segments, side chains included, under `allocation`. */
async function segments(gw: TestGateway, id: string, allocation = "uniform"): Promise<Segment[]> {
  const response = await gw.fetch(
    `/sessions/${id}/samples?include_side=true&reward_allocation=${allocation}`,
    { headers: ADMIN_HEADERS },
  );
  assert.equal(response.status, 200);
  return (await response.json()).samples;
}

/** Asserts every segment is exact against the engine calls that built it, and every call built one. */
function assertAllExact(gw: TestGateway, all: readonly Segment[]): void {
  let used = 0;
  for (const segment of all) {
    const calls = callsOfSample(gw.engine.calls, segment);
    assertChainExact(calls, [{ ...segment, kind: "final" }], segment.chain_id);
    used += calls.length;
  }
  assert.equal(used, gw.engine.calls.length, "every engine call is in one segment");
}

/** The engine calls of the main agent (its system prompt is Qwen Code's own). */
function mainCalls(gw: TestGateway) {
  return gw.engine.calls.filter((call) =>
    gw.tokenizer.decode(call.inputIds.slice(0, 8)).startsWith("<|im_start|>system\nYou are Qwen")
  );
}

for (const perSession of [false, true]) {
  Deno.test(
    `Qwen Code edits a file through the gateway, every turn token-exact (${
      perSession ? "token in the base URL" : "token as the API key"
    })`,
    async () => {
      const repo = await tempRepo();
      const gw = await startGateway({ script: episodeScript(repo) });
      try {
        const { id, token } = await gw.openSession({ agent: "qwen_code" });
        const run = await runQwen({
          baseUrl: perSession ? `${gw.url}/sessions/${token}/v1` : `${gw.url}/v1`,
          apiKey: perSession ? "unused" : token,
          cwd: repo,
          prompt: PROMPT,
        });
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.result?.result, "Created hello.txt; it contains: hello");
        assert.equal(await Deno.readTextFile(`${repo}/hello.txt`), "hello\n");
        const turns = gw.exchanges.filter((e) => e.path.endsWith("/v1/chat/completions"));
        assert.ok(turns.every((e) => e.status === 200), turns.map((e) => e.status).join(","));
        const main = await gw.samples(id);
        assert.deepEqual(main.map((s) => s.kind), ["final"], "helpers are not trained");
        assert.equal(callsOfSample(gw.engine.calls, main[0]).length, 3, "write, shell, answer");
        assertChainExact(mainCalls(gw), main, "main conversation");
        // Whatever the CLI's memory extractor sent is in side chains of its own, each exact.
        const all = await segments(gw, id);
        assert.deepEqual(all.filter((s) => s.kind !== "side").map((s) => s.kind), ["final"]);
        assertAllExact(gw, all);
      } finally {
        await gw.close();
        await Deno.remove(repo, { recursive: true });
      }
    },
  );
}

/** Runs Qwen Code on `prompt` in a scratch repository against a gateway playing `script`. */
async function episode(script: Script, prompt: string) {
  const repo = await tempRepo();
  const gw = await startGateway({ script });
  const close = async () => {
    await gw.close();
    await Deno.remove(repo, { recursive: true });
  };
  try {
    const { id, token } = await gw.openSession({ agent: "qwen_code" });
    const run = await runQwen({ baseUrl: `${gw.url}/v1`, apiKey: token, cwd: repo, prompt });
    return { gw, id, run, close };
  } catch (error) {
    await close();
    throw error;
  }
}

Deno.test("Qwen Code's memory extractor after a one-answer episode is a side chain: the agent's conversation is final and gets the reward", async () => {
  const { gw, id, run, close } = await episode(oneAnswerScript(), ONE_ANSWER_PROMPT);
  try {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.result, "Paris.");
    // The extractor ran after the agent's only turn: its own system prompt and tools, the agent's
    // conversation re-sent, a look at the memory files, then its answer.
    const requests = gw.exchanges.filter((e) => e.path === "/v1/chat/completions");
    assert.equal(requests.length, 3, "the answer, then the extractor's two turns");
    const [agent, extractor] = [requests[0], requests[1]].map((e) => JSON.parse(e.body));
    assert.match(extractor.messages[0].content, /memory extraction subagent/);
    assert.notDeepEqual(
      extractor.tools.map((t: { function: { name: string } }) => t.function.name).sort(),
      agent.tools.map((t: { function: { name: string } }) => t.function.name).sort(),
    );
    assert.deepEqual(extractor.messages[1], agent.messages[1], "the agent's query re-sent");
    assert.equal(
      gw.tokenizer.decode(gw.engine.calls.at(-1)!.output!),
      `${MEMORY_REPLY}<|im_end|>`,
    );

    const all = await segments(gw, id);
    assert.deepEqual(all.map((s) => [s.kind, s.turns.length]), [["final", 1], ["side", 2]]);
    assertAllExact(gw, all);
    assertChainExact(mainCalls(gw), [all[0]], "the agent's conversation");
    assert.deepEqual(
      (await gw.samples(id)).map((s) => s.kind),
      ["final"],
      "side chains are trained only when asked for",
    );

    // The reward goes to the agent's sample, never to the extractor's.
    const rewarded = await gw.fetch(`/sessions/${id}/reward`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ score: 1 }),
    });
    assert.equal(rewarded.status, 200, await rewarded.text());
    assert.deepEqual(
      (await segments(gw, id, "final_only")).map((s) => [s.kind, s.reward]),
      [["final", 1], ["side", 0]],
    );
    assert.deepEqual(
      (await segments(gw, id)).map((s) => [s.kind, s.reward]),
      [["final", 0.5], ["side", 0.5]],
      "uniform over what is exported: side chains only when asked for",
    );
    const trained = await gw.fetch(`/sessions/${id}/samples?reward_allocation=uniform`, {
      headers: ADMIN_HEADERS,
    });
    assert.deepEqual(
      (await trained.json()).samples.map((s: Segment) => [s.kind, s.reward]),
      [["final", 1]],
    );
  } finally {
    await close();
  }
});

Deno.test("Qwen Code's agent tool starts a sub-agent chain linked to its call; the parent resumes in place", async () => {
  const { gw, id, run, close } = await episode(subagentScript(), SUBAGENT_PROMPT);
  try {
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.result, SUBAGENT_ANSWER);
    const all = await segments(gw, id);
    const trained = all.filter((s) => s.kind !== "side");
    assert.deepEqual(trained.map((s) => [s.kind, s.turns.length]), [["final", 2], ["subagent", 2]]);
    assertAllExact(gw, all);
    const [main, sub] = trained;
    assertChainExact(mainCalls(gw), [main], "the parent resumed in place");
    // The sub-agent names the `agent` call whose task it was given, as the client saw its id.
    const calls = [];
    for (const exchange of gw.exchanges.filter((e) => e.path === "/v1/chat/completions")) {
      const body = JSON.parse(exchange.body);
      for (const message of body.messages) {
        for (const toolCall of message.tool_calls ?? []) {
          if (toolCall.function.name === "agent") calls.push(toolCall);
        }
      }
    }
    assert.ok(calls.length > 0, "the parent echoed its agent call");
    assert.equal(JSON.parse(calls[0].function.arguments).prompt, SUBAGENT_TASK);
    assert.deepEqual(sub.lineage, { ...sub.lineage, parent: main.chain_id, dispatch: calls[0].id });
    assert.ok(gw.tokenizer.decode(sub.prompt_ids).includes(SUBAGENT_TASK));
  } finally {
    await close();
  }
});
