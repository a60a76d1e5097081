/**
 * A gateway process killed with SIGKILL while its rollout jobs run: another process on the same
 * KV takes them over once their leases run out — a job with an attempt to spare is run again and
 * completed, one without is failed with the reason — and nothing is left in `agent` for ever.
 */
import assert from "node:assert/strict";
import { listDir, processesWith, waitFor } from "../_host.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import { awaitJob, submit } from "../rollout/_rollout.ts";
import { ADMIN_HEADERS } from "../_gateway.ts";
import { type GatewayProcess, spawnGateway } from "./_gateway_process.ts";

Deno.test("a gateway killed while its rollouts run: one job is completed by another process, one fails with the reason", async () => {
  const dir = await Deno.makeTempDir({ prefix: "rollout_crash_" });
  const marker = `rg_crash_${crypto.randomUUID().slice(0, 8)}`;
  const env = {
    KV_PATH: `${dir}/gateway.kv`,
    SANDBOX_ROOT: `${dir}/sandboxes`,
    LEASE_TTL_MS: "2000",
    ROLLOUT_POLL_MS: "100",
    ROLLOUT_CONCURRENCY: "2",
  };
  let a: GatewayProcess | null = null;
  let b: GatewayProcess | null = null;
  try {
    // Process A answers slowly (its built-in scripted engine), so its agents are mid-turn.
    const first = await spawnGateway({ ...env, SCRIPTED_LATENCY_MS: "300" });
    a = first;
    const { task } = await fixtureTask("python_unittest");
    const submitted: Record<string, string> = {};
    for (const attempts of [2, 1]) {
      const agent = { prompt_template: `{problem_statement}\n${marker}` };
      const body = { task, max_attempts: attempts, agent };
      submitted[attempts] = (await submit(first, body)).jobs[0].id;
    }
    for (const id of Object.values(submitted)) {
      await awaitJob(first, id, (v) => v.phase === "agent" && v.progress.elapsed_ms > 0);
    }
    await waitFor(async () => (await processesWith(marker)).length > 0, "the agents to start");
    await first.kill("SIGKILL");
    a = null;

    const second = await spawnGateway({ ...env, SCRIPTED_LATENCY_MS: "0" });
    b = second;
    const retried = await awaitJob(second, submitted[2]);
    assert.equal(retried.phase, "done", JSON.stringify(retried));
    assert.equal(retried.attempt, 2);
    assert.match(retried.detail, /^Attempt 1 of 2 lost its worker \(.+\) in phase agent$/);
    assert.equal(retried.sessions.length, 2);
    assert.equal(typeof retried.result.reward.score, "number");

    const lost = await awaitJob(second, submitted[1]);
    assert.deepEqual([lost.phase, lost.reason, lost.attempt], ["failed", "worker_lost", 1]);
    assert.match(lost.detail, /^Attempt 1 of 1 lost its worker \(.+\) in phase agent$/);

    // The killed attempts' sessions were closed as aborted.
    for (const id of [retried.sessions[0], lost.sessions[0]]) {
      const response = await fetch(`${second.url}/sessions/${id}`, { headers: ADMIN_HEADERS });
      const session = await response.json();
      assert.deepEqual([session.status, session.closed_as], ["closed", "aborted"], id);
    }
    // The dead process's sandboxes died with it (bubblewrap's --die-with-parent), or, for one
    // still starting at the kill, were killed by the survivor, which removed their folders.
    await waitFor(async () => (await processesWith(marker)).length === 0, "the agents to go");
    assert.deepEqual(await listDir(`${dir}/sandboxes/sandboxes`), []);
  } finally {
    await a?.kill("SIGKILL");
    await b?.close();
    await Deno.remove(dir, { recursive: true });
  }
});
