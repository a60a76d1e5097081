/**
 * The real Claude Code CLI dispatches a sub-agent through the gateway: the session records the
 * main chain and the sub-agent's chain, each token-exact, the sub-agent's lineage naming the
 * Agent call that dispatched it.
 */
import assert from "node:assert/strict";
import { runScenario } from "../../fixtures/claude_code/run_scenario.ts";
import { SUBAGENT } from "../../fixtures/claude_code/scenarios.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { ADMIN_TOKEN } from "../_gateway.ts";
import { sseMessage } from "../_sse.ts";

Deno.test("Claude Code's sub-agent gets its own exact chain, linked to the Agent call that dispatched it", async () => {
  const result = await runScenario(SUBAGENT);
  const { gw, sessionId } = result;
  try {
    const [run] = result.runs;
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.result?.result, "All done: the sub-agent ran echo alpha.");
    const response = await fetch(`${gw.url}/sessions/${sessionId}/samples`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const { samples } = await response.json();
    assert.deepEqual(samples.map((s: { kind: string }) => s.kind), ["final", "subagent"]);
    const [main, sub] = samples;
    const agentHeaders = gw.exchanges.map((e) => e.headers["x-claude-code-agent-id"]).filter(
      Boolean,
    );
    assert.ok(agentHeaders.length > 0, "the CLI named its sub-agent");
    assert.equal(sub.lineage.agent_id, agentHeaders[0]);
    assert.equal(sub.lineage.parent, main.chain_id);
    const dispatches = [];
    for (const exchange of gw.exchanges.filter((e) => e.path.startsWith("/v1/messages"))) {
      for (const block of sseMessage(await exchange.response).content) {
        if (block.type === "tool_use" && block.name === "Agent") dispatches.push(block.id);
      }
    }
    assert.deepEqual([sub.lineage.dispatch], dispatches);
    let used = 0;
    for (const segment of samples) {
      const calls = callsOfSample(gw.engine.calls, segment);
      assertChainExact(calls, [{ ...segment, kind: "final" }], segment.chain_id);
      used += calls.length;
    }
    assert.equal(used, gw.engine.calls.length);
  } finally {
    await result.close();
  }
});
