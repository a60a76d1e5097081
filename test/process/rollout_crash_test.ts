/**
 * A gateway process killed with SIGKILL while its rollout jobs run: another process on the same
 * KV takes them over once their leases run out — a job with an attempt to spare is run again and
 * completed, one without is failed with the reason — and nothing is left in `agent` for ever.
 */
import assert from "node:assert/strict";
import { listDir, processesWith } from "../evaluate/_tasks.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import { ADMIN_TOKEN, type GatewayProcess, spawnGateway } from "./_gateway_process.ts";

const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };

async function view(url: string, id: string): Promise<JobJson> {
  const response = await fetch(`${url}/rollout/${id}`, { headers: ADMIN });
  assert.equal(response.status, 200);
  return await response.json();
}

/** A job's view, as JSON. */
// deno-lint-ignore no-explicit-any
type JobJson = Record<string, any>;

async function until(
  url: string,
  id: string,
  done: (v: JobJson) => boolean,
  limitMs = 60_000,
): Promise<JobJson> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const current = await view(url, id);
    if (done(current)) return current;
    if (Date.now() > deadline) throw new Error(`Job ${id} stuck: ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

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
      const response = await fetch(`${first.url}/rollout`, {
        method: "POST",
        headers: ADMIN,
        body: JSON.stringify({
          task,
          max_attempts: attempts,
          agent: { prompt_template: `{problem_statement}\n${marker}` },
        }),
      });
      assert.equal(response.status, 202);
      submitted[attempts] = (await response.json()).jobs[0].id;
    }
    for (const id of Object.values(submitted)) {
      await until(first.url, id, (v) => v.phase === "agent" && v.progress.elapsed_ms > 0);
    }
    await waitForProcess(marker);
    await first.kill("SIGKILL");
    a = null;

    const second = await spawnGateway({ ...env, SCRIPTED_LATENCY_MS: "0" });
    b = second;
    const retried = await until(
      b.url,
      submitted[2],
      (v) => ["done", "failed", "aborted"].includes(v.phase),
    );
    assert.equal(retried.phase, "done", JSON.stringify(retried));
    assert.equal(retried.attempt, 2);
    assert.match(retried.detail, /^Attempt 1 of 2 lost its worker \(.+\) in phase agent$/);
    assert.equal(retried.sessions.length, 2);
    assert.equal(typeof retried.result.reward.score, "number");

    const lost = await until(
      b.url,
      submitted[1],
      (v) => ["done", "failed", "aborted"].includes(v.phase),
    );
    assert.deepEqual([lost.phase, lost.reason, lost.attempt], ["failed", "worker_lost", 1]);
    assert.match(lost.detail, /^Attempt 1 of 1 lost its worker \(.+\) in phase agent$/);

    // The killed attempts' sessions were closed as aborted.
    for (const id of [retried.sessions[0], lost.sessions[0]]) {
      const session = await (await fetch(`${second.url}/sessions/${id}`, { headers: ADMIN }))
        .json();
      assert.deepEqual([session.status, session.closed_as], ["closed", "aborted"], id);
    }
    // The dead process's sandboxes died with it (bubblewrap's --die-with-parent), or, for one
    // still starting at the kill, were killed by the survivor, which removed their folders.
    await waitGone(marker);
    assert.deepEqual(await listDir(`${dir}/sandboxes/sandboxes`), []);
  } finally {
    await a?.kill("SIGKILL");
    await b?.close();
    await Deno.remove(dir, { recursive: true });
  }
});

async function waitForProcess(marker: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await processesWith(marker)).length === 0) {
    if (Date.now() > deadline) throw new Error("The agents never started");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function waitGone(marker: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await processesWith(marker)).length > 0) {
    if (Date.now() > deadline) throw new Error("The agents outlived their gateway");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
