/**
 * One name for how a session's reward is shared among its segments: `reward_allocation`, in the
 * samples export's query as in `POST /sessions`; `allocation`, its old name, is still read.
 */
import assert from "node:assert/strict";
import { readScenario, replayScenario } from "../_claude_scenario.ts";
import { ADMIN_HEADERS, startGateway } from "../_gateway.ts";

Deno.test("the samples export shares the reward by reward_allocation, or by its old name allocation", async () => {
  const gw = await startGateway();
  try {
    const { id, token } = await gw.openSession();
    await replayScenario(gw, token, await readScenario("subagent"));
    const rewarded = await gw.fetch(`/sessions/${id}/reward`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ score: 1 }),
    });
    assert.equal(rewarded.status, 200);
    await rewarded.body?.cancel();
    const rewards = async (query: string) => {
      const response = await gw.fetch(`/sessions/${id}/samples${query}`, {
        headers: ADMIN_HEADERS,
      });
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      return body.samples.map((s: { kind: string; reward: number }) => `${s.kind} ${s.reward}`);
    };
    assert.deepEqual(await rewards(""), ["final 0.5", "subagent 0.5"], "uniform by default");
    assert.deepEqual(await rewards("?reward_allocation=copy"), ["final 1", "subagent 1"]);
    assert.deepEqual(await rewards("?allocation=copy"), ["final 1", "subagent 1"]);
    assert.deepEqual(await rewards("?reward_allocation=final_only"), ["final 1", "subagent 0"]);
    assert.deepEqual(
      await rewards("?reward_allocation=copy&allocation=copy"),
      ["final 1", "subagent 1"],
    );
    const conflict = await gw.fetch(
      `/sessions/${id}/samples?reward_allocation=copy&allocation=uniform`,
      { headers: ADMIN_HEADERS },
    );
    assert.equal(conflict.status, 400);
    assert.match((await conflict.json()).error.message, /^allocation: the old name of reward_/);
  } finally {
    await gw.close();
  }
});
