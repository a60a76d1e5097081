/**
 * The real OpenAI Codex CLI (pinned in tools/codex), headless and offline, through the gateway's
 * Responses API and the scripted engine: it writes a file and runs a command in a temporary git
 * repository, and every turn is recorded token for token; with `[agents]` on, it spawns a
 * sub-agent with its namespaced `spawn_agent` tool, and the sub-agent's conversation is a
 * sub-agent chain linked to that call.
 */
import assert from "node:assert/strict";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { tempRepo } from "../_claude.ts";
import { runCodex } from "../_codex.ts";
import { ADMIN_HEADERS, type SampleJson, startGateway } from "../_gateway.ts";
import {
  episodeScript,
  PROMPT,
  SUBAGENT_ANSWER,
  SUBAGENT_PROMPT,
  SUBAGENT_REPORT,
  SUBAGENT_TASK,
  subagentScript,
} from "../../fixtures/codex/episode.ts";

for (const perSession of [false, true]) {
  Deno.test(
    `Codex edits a file through the gateway's Responses API, every turn token-exact (${
      perSession ? "token in the base URL" : "token as the API key"
    })`,
    async () => {
      const repo = await tempRepo();
      const gw = await startGateway({ script: episodeScript() });
      try {
        const { id, token } = await gw.openSession({ agent: "codex" });
        const run = await runCodex({
          baseUrl: perSession ? `${gw.url}/sessions/${token}/v1` : `${gw.url}/v1`,
          apiKey: perSession ? "unused" : token,
          cwd: repo,
          prompt: PROMPT,
        });
        assert.equal(run.code, 0, `${run.stderr}\n${JSON.stringify(run.events)}`);
        assert.equal(run.lastMessage, "Created hello.txt; it contains: hello");
        assert.equal(await Deno.readTextFile(`${repo}/hello.txt`), "hello\n");
        const turns = gw.exchanges.filter((e) => e.path.endsWith("/v1/responses"));
        assert.deepEqual(turns.map((e) => e.status), [200, 200, 200]);
        const samples = await gw.samples(id);
        assert.equal(samples.length, 1, "one conversation");
        assert.equal(gw.engine.calls.length, 3, "three turns: write, read, answer");
        assertChainExact(gw.engine.calls, samples, "codex");
        // The command's output reached the model as Codex reports it.
        assert.match(
          gw.tokenizer.decode(gw.engine.calls[2].inputIds),
          /<tool_response>\n[^]*Process exited with code 0[^]*hello\n[^]*<\/tool_response>/,
        );
      } finally {
        await gw.close();
        await Deno.remove(repo, { recursive: true });
      }
    },
  );
}

Deno.test("Codex with [agents] on spawns a sub-agent: its own exact chain, linked to the spawn_agent call, the root's chain final", async () => {
  const repo = await tempRepo();
  const gw = await startGateway({ script: subagentScript() });
  try {
    const { id, token } = await gw.openSession({ agent: "codex" });
    const run = await runCodex({
      baseUrl: `${gw.url}/v1`,
      apiKey: token,
      cwd: repo,
      prompt: SUBAGENT_PROMPT,
      agents: true,
    });
    assert.equal(run.code, 0, `${run.stderr}\n${JSON.stringify(run.events)}`);
    assert.equal(run.lastMessage, SUBAGENT_ANSWER);
    // The CLI ran the call it was answered with, in its namespace, and named its sub-agent.
    const spawned = run.events.find((event) =>
      (event.item as { tool?: string } | undefined)?.tool === "spawn_agent"
    );
    assert.ok(spawned, JSON.stringify(run.events));
    const requests = gw.exchanges.filter((e) => e.path === "/v1/responses");
    const children = requests.filter((e) => e.headers["x-codex-parent-thread-id"]);
    assert.ok(children.length >= 2, "the sub-agent's own requests");
    const response = await gw.fetch(`/sessions/${id}/samples`, { headers: ADMIN_HEADERS });
    const samples: (SampleJson & { lineage: Record<string, string | null> })[] =
      (await response.json()).samples;
    assert.deepEqual(samples.map((s) => s.kind), ["final", "subagent"]);
    const [main, sub] = samples;
    // The root echoed its spawn_agent call with its namespace: the sub-agent's dispatch is it.
    const echoed = JSON.parse(requests.at(-1)!.body).input.find((item: Record<string, string>) =>
      item.type === "function_call" && item.name === "spawn_agent"
    );
    assert.equal(echoed.namespace, "multi_agent_v1");
    assert.equal(JSON.parse(echoed.arguments).message, SUBAGENT_TASK);
    assert.deepEqual(sub.lineage, {
      parent: main.chain_id,
      dispatch: echoed.call_id,
      agent_id: children[0].headers["thread-id"],
    });
    let used = 0;
    for (const segment of samples) {
      const calls = callsOfSample(gw.engine.calls, segment);
      assertChainExact(calls, [{ ...segment, kind: "final" }], segment.chain_id);
      used += calls.length;
    }
    assert.equal(used, gw.engine.calls.length, "every engine call is in one segment");
    assert.ok(
      gw.tokenizer.decode(main.prompt_ids.concat(main.response_ids)).includes(SUBAGENT_REPORT),
    );
  } finally {
    await gw.close();
    await Deno.remove(repo, { recursive: true });
  }
});
