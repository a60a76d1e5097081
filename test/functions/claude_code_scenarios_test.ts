/**
 * Replays the multi-chain episodes recorded from the real Claude Code CLI (fixtures/claude_code,
 * made by record.ts): a sub-agent dispatch, two parallel sub-agents, a compaction and a side
 * request. For each, the trainable segments are exactly the real agent chains (no false forks,
 * nothing dropped), every segment is token-exact, and each sub-agent's lineage names the Agent
 * call that dispatched it.
 */
import assert from "node:assert/strict";
import { SCENARIOS } from "../../fixtures/claude_code/scenarios.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { readScenario, replayScenario } from "../_claude_scenario.ts";
import { sseMessage } from "../_sse.ts";
import { ADMIN_TOKEN, type SampleJson, startGateway, type TestGateway } from "../_gateway.ts";

async function segments(gw: TestGateway, id: string, query = ""): Promise<SampleJson[]> {
  const response = await gw.fetch(`/sessions/${id}/samples${query}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  assert.equal(response.status, 200);
  return (await response.json()).samples;
}

for (const scenario of SCENARIOS) {
  Deno.test(`the recorded "${scenario.name}" episode replays as exactly its real agent chains`, async () => {
    const recorded = await readScenario(scenario.name);
    const gw = await startGateway();
    try {
      const { id, token } = await gw.openSession();
      await replayScenario(gw, token, recorded);
      const trained = await segments(gw, id);
      assert.deepEqual(trained.map((s) => s.kind), scenario.segments);
      const all = await segments(gw, id, "?include_side=true");
      assert.deepEqual(all.map((s) => s.kind), scenario.allSegments);
      // Every segment is exact against the engine calls that built it; every call built one.
      const used = new Set<string>();
      for (const segment of all) {
        const calls = callsOfSample(gw.engine.calls, segment);
        assertChainExact(
          calls,
          [{ ...segment, kind: "final" }],
          `${scenario.name}/${segment.chain_id}`,
        );
        for (const call of calls) used.add(call.rid);
      }
      assert.equal(used.size, gw.engine.calls.length, "no engine call outside a segment");
      // A sub-agent's lineage names the Agent call whose prompt is its task.
      const main = all.find((s) => s.kind === "final" || s.kind === "wipe")!;
      const dispatched = await agentCalls(gw);
      for (const sub of all.filter((s) => s.kind === "subagent")) {
        const lineage =
          (sub as unknown as { lineage: { parent: string; dispatch: string } }).lineage;
        assert.equal(lineage.parent, main.chain_id);
        const task = gw.tokenizer.decode(sub.prompt_ids);
        const expected = dispatched.find((c) => task.includes(String(c.input.prompt)));
        assert.ok(expected, `a dispatch for ${sub.chain_id}`);
        assert.equal(lineage.dispatch, expected.id);
      }
      if (scenario.name === "parallel") {
        const dispatches = all.filter((s) => s.kind === "subagent").map((s) =>
          (s as unknown as { lineage: { dispatch: string } }).lineage.dispatch
        );
        assert.equal(new Set(dispatches).size, 2, "each sub-agent has its own dispatch");
      }
    } finally {
      await gw.close();
    }
  });
}

/** Every Agent tool call the gateway answered with, with the id the client got. */
async function agentCalls(gw: TestGateway) {
  const out: { id: string; input: Record<string, unknown> }[] = [];
  for (const exchange of gw.exchanges.filter((e) => e.path.startsWith("/v1/messages"))) {
    const text = await exchange.response;
    if (!text.startsWith("event:")) continue;
    for (const block of sseMessage(text).content) {
      if (block.type === "tool_use" && block.name === "Agent") {
        out.push({ id: block.id, input: block.input });
      }
    }
  }
  return out;
}
