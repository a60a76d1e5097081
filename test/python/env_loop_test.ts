/**
 * slime's tau-bench rollout with the stdlib Python client (python/examples/env_loop_rollout.py):
 * two retail tasks submitted as groups of the `env_loop` harness, the episodes run by the
 * gateway against the fixture environment, the slime samples read back token-exact.
 */
import assert from "node:assert/strict";
import { startRetailEnv } from "../../fixtures/retail_env.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { ADMIN_TOKEN, startGateway } from "../_gateway.ts";
import { retailScript } from "../rollout/_retail.ts";

Deno.test("slime's tau-bench flow: the Python example rolls out two tasks and gets exact slime samples with the environment's rewards", async () => {
  const gw = await startGateway({ script: retailScript, worker: true });
  const env = await startRetailEnv();
  try {
    const output = await new Deno.Command("python3", {
      args: ["python/examples/env_loop_rollout.py", "--env", env.url, "--tasks", "0", "1"],
      cwd: new URL("../../", import.meta.url),
      env: { GATEWAY_URL: gw.url, ADMIN_TOKEN, PYTHONDONTWRITEBYTECODE: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 0, stderr);
    const results = JSON.parse(new TextDecoder().decode(output.stdout));
    assert.deepEqual(
      results.map((
        r: Record<string, unknown>,
      ) => [r.task_index, r.phase, r.status, r.reward, r.steps]),
      [[0, "done", "COMPLETED", 1, 6], [1, "done", "COMPLETED", 1, 3]],
    );
    for (const result of results) {
      assert.equal(result.samples.length, 1);
      const slime = result.samples[0];
      assert.equal(slime.reward, 1);
      assert.equal(slime.status, "completed");
      // The episode's chain is exact against its engine calls, and the slime sample is it.
      const samples = await gw.samples(result.session_id);
      assertChainExact(callsOfSample(gw.engine.calls, samples[0]), samples, `${result.task_index}`);
      assert.deepEqual(slime.tokens, [...samples[0].prompt_ids, ...samples[0].response_ids]);
      assert.equal(slime.response_length, samples[0].response_ids.length);
      assert.deepEqual(slime.loss_mask, samples[0].loss_mask);
      assert.deepEqual(slime.rollout_log_probs, samples[0].logprobs);
    }
  } finally {
    await env.close();
    await gw.close();
  }
});
