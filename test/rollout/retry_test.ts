/**
 * Rollout jobs under infrastructure faults, through HTTP with the gateway's own worker: a sandbox
 * that does not boot, a boot that hangs, an engine down past the agent's retries. Each is tried
 * again in a fresh attempt and ends with the agent's outcome and exact samples; a job that runs
 * out of attempts (or of its group's retry budget) ends `infra` with no reward anywhere; an agent
 * that truly fails is not tried again and keeps its reward.
 */
import assert from "node:assert/strict";
import { startFakeE2b } from "../../fixtures/fake_e2b.ts";
import { LocalBackend, SandboxUnavailableError } from "../../lib/sandbox/mod.ts";
import type { EngineCall, Fault } from "../../lib/scripted_engine/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import {
  awaitJob,
  FIX_CALC,
  HALF_FIX_CALC,
  type JobJson,
  miniSweAgent,
  oneCommand,
  submit,
  toolCall,
} from "./_rollout.ts";

/** A local backend whose boots play `fault(n)` first (n from 1): throw, hang, or go on. */
async function faultyLocal(fault: (boot: number, signal: AbortSignal) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "rg-faulty-" });
  let boots = 0;
  const backend = new LocalBackend({
    root: `${root}/sandboxes`,
    bootFault: (signal) => fault(++boots, signal),
  });
  return {
    backend,
    boots: () => boots,
    close: async () => {
      await backend.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

/**
 * Runs `fn` on a gateway whose worker runs jobs (Claude Code fixing calc.py) on a local backend
 * whose boots play `fault`; both closed after.
 */
async function withFaultyBoots(
  fault: (boot: number, signal: AbortSignal) => Promise<void>,
  fn: (gw: TestGateway, local: Awaited<ReturnType<typeof faultyLocal>>) => Promise<void>,
): Promise<void> {
  const local = await faultyLocal(fault);
  const gw = await startGateway({
    script: oneCommand(FIX_CALC),
    worker: true,
    sandbox: local.backend,
  });
  try {
    await fn(gw, local);
  } finally {
    await gw.close();
    await local.close();
  }
}

const unavailable = (boot: number) =>
  new SandboxUnavailableError(`boot ${boot}: 503 Service Unavailable (the test's fault)`);

/** The group's listing: `complete`, `agent_jobs`, `infra_jobs` and the jobs. */
async function group(gw: TestGateway, id: string): Promise<JobJson> {
  const response = await gw.fetch(`/rollout?group_id=${id}`, { headers: ADMIN_HEADERS });
  assert.equal(response.status, 200);
  return await response.json();
}

/** Asserts that a session of a failed attempt carries no reward in its view or any export. */
async function assertNoReward(gw: TestGateway, sessionId: string): Promise<void> {
  const view = await gw.session(sessionId);
  assert.equal(view.reward, null, sessionId);
  assert.equal(view.closed_as, "aborted", sessionId);
  for (const format of ["samples", "slime", "verl"]) {
    const response = await gw.fetch(`/sessions/${sessionId}/samples?format=${format}`, {
      headers: ADMIN_HEADERS,
    });
    const body = await response.json();
    for (const sample of body.samples) {
      assert.equal(sample.reward ?? sample.reward_score ?? null, null, `${format} ${sessionId}`);
    }
  }
}

const FAST = { retry_backoff_ms: 20 };

/** The command agent (mini-swe-agent) fixing calc.py over Chat Completions, then answering. */
const COMMAND_FIX = oneCommand(
  FIX_CALC,
  "Fixed.",
  undefined,
  (command) => toolCall("bash", { command }),
);

/**
 * The command agent's job on the python_unittest fixture, whose first attempt the
 * infrastructure fails: done on the second, rewarded 1, the first attempt's session unrewarded.
 */
async function retriedOnce(gw: TestGateway): Promise<JobJson> {
  const { task } = await fixtureTask("python_unittest");
  const submitted = await submit(gw, { task, agent: await miniSweAgent(), ...FAST });
  const view = await awaitJob(gw, submitted.jobs[0].id, undefined, 90_000);
  assert.deepEqual(
    [view.phase, view.outcome, view.attempt, view.result.reward.score],
    ["done", "agent", 2, 1],
    JSON.stringify(view),
  );
  await assertNoReward(gw, view.sessions[0]);
  return view;
}

Deno.test("a sandbox that does not boot is tried again in a fresh attempt: the agent's outcome, exact samples, the dead attempt's session unrewarded", async () => {
  // Attempt 1's three boots fail (the backend's own tries); attempt 2's boot works.
  await withFaultyBoots((boot) => {
    if (boot <= 3) throw unavailable(boot);
    return Promise.resolve();
  }, async (gw) => {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, ...FAST });
    const view = await awaitJob(gw, submitted.jobs[0].id, undefined, 60_000);
    assert.deepEqual(
      [view.phase, view.outcome, view.attempt, view.sessions.length],
      ["done", "agent", 2, 2],
      JSON.stringify(view),
    );
    assert.equal(view.result.reward.score, 1);
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assertChainExact(calls, view.result.samples.samples);
    await assertNoReward(gw, view.sessions[0]);
    const listed = await group(gw, submitted.group_id);
    assert.deepEqual([listed.complete, listed.agent_jobs, listed.infra_jobs], [true, 1, []]);
  });
});

Deno.test("a boot that hangs is given up after budgets.boot_ms and booted again", async () => {
  await withFaultyBoots(
    (boot, signal) =>
      boot === 1
        ? new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))
        : Promise.resolve(),
    async (gw, local) => {
      const { task } = await fixtureTask("python_unittest");
      // The hung boot never ends; a good one has 5 s, whatever the machine's load.
      const submitted = await submit(gw, { task, budgets: { boot_ms: 5_000 }, ...FAST });
      const view = await awaitJob(gw, submitted.jobs[0].id, undefined, 60_000);
      assert.deepEqual([view.phase, view.outcome, view.attempt], ["done", "agent", 1]);
      assert.equal(view.result.reward.score, 1);
      assert.ok(local.boots() >= 3, "the hung boot, the agent's, the grader's");
    },
  );
});

Deno.test("a job out of attempts ends infra with no reward in any export; the group's retry budget bounds the retries", async () => {
  await withFaultyBoots((boot) => {
    throw unavailable(boot);
  }, async (gw) => {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, n: 2, max_attempts: 3, retry_budget: 1, ...FAST });
    const views = await Promise.all(
      submitted.jobs.map((job) => awaitJob(gw, job.id, undefined, 60_000)),
    );
    for (const view of views) {
      assert.deepEqual(
        [view.phase, view.reason, view.outcome],
        ["failed", "sandbox_unavailable", "infra"],
        JSON.stringify(view),
      );
      assert.equal(view.result?.reward ?? null, null);
      assert.equal(view.result?.samples ?? null, null);
      for (const session of view.sessions) await assertNoReward(gw, session);
    }
    // Two jobs of three attempts each, but one retry for the whole group.
    assert.deepEqual(views.map((view) => view.attempt).sort(), [1, 2]);
    const listed = await group(gw, submitted.group_id);
    assert.deepEqual(
      [listed.complete, listed.agent_jobs, listed.infra_jobs.sort()],
      [false, 0, submitted.jobs.map((job) => job.id).sort()],
    );
  });
});

Deno.test("an agent that truly fails is not tried again and keeps its reward", async () => {
  const gw = await startGateway({ script: oneCommand(HALF_FIX_CALC), worker: true });
  try {
    const { task } = await fixtureTask("python_unittest");
    const view = await awaitJob(gw, (await submit(gw, { task, ...FAST })).jobs[0].id);
    assert.deepEqual(
      [view.phase, view.outcome, view.attempt, view.result.reward.score],
      ["done", "agent", 1, 0],
    );
    assert.equal((await gw.session(view.session_id)).reward.score, 0);
  } finally {
    await gw.close();
  }
});

Deno.test("an engine down past the agent's own retries fails the attempt on the infrastructure, and the next attempt is exact", async () => {
  // The engine refuses the first generation; the command agent, which does not retry, exits 1.
  let generations = 0;
  const faultFor = (_call: EngineCall): Fault | undefined =>
    ++generations === 1 ? { kind: "unavailable" } : undefined;
  const gw = await startGateway({ script: COMMAND_FIX, worker: true, faultFor });
  try {
    const view = await retriedOnce(gw);
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assertChainExact(calls, view.result.samples.samples);
  } finally {
    await gw.close();
  }
});

Deno.test("on E2B: 429s, a boot that hangs and one that dies, and a sandbox vanished mid-run are each retried to an exact sample", async () => {
  // Creates 1–3 refused (429), 4 hangs past boot_ms, 5 answers a dead sandbox: attempt 1's three
  // tries and attempt 2's first two fail; attempt 2's third boot works.
  const fake = await startFakeE2b({
    faults: {
      refuse: { at: [1, 2, 3], status: 429 },
      hang: { at: [4] },
      die: { at: [5] },
      slowUploadMs: 5,
    },
  });
  const gw = await startGateway({
    script: COMMAND_FIX,
    worker: true,
    env: { SANDBOX_BACKEND: "e2b", ...fake.env, E2B_BOOT_ATTEMPTS: "1", E2B_BOOT_BACKOFF_MS: "1" },
  });
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, {
      task,
      agent: await miniSweAgent(),
      // Long enough for a good boot (with its upload) on a loaded machine; the hung one never ends.
      budgets: { boot_ms: 5_000 },
      max_attempts: 4,
      retry_budget: 3,
      ...FAST,
    });
    const view = await awaitJob(gw, submitted.jobs[0].id, undefined, 90_000);
    assert.deepEqual(
      [view.phase, view.outcome, view.result?.reward?.score, view.result?.patch],
      ["done", "agent", 1, gold],
      JSON.stringify(view),
    );
    assert.ok(view.attempt >= 2, `retried: ${view.attempt}`);
    for (const session of view.sessions.slice(0, -1)) await assertNoReward(gw, session);
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assertChainExact(calls.slice(-2), view.result.samples.samples);
    assert.deepEqual(fake.live(), []);
  } finally {
    await gw.close();
    await fake.close();
  }
});

Deno.test("a sandbox that vanishes under the agent is the infrastructure's failure, retried", async () => {
  // The first sandbox (the agent's) vanishes during its fourth command.
  const fake = await startFakeE2b({ faults: { vanish: { at: [1], afterCommands: 4 } } });
  const gw = await startGateway({
    script: COMMAND_FIX,
    worker: true,
    env: { SANDBOX_BACKEND: "e2b", ...fake.env, E2B_BOOT_BACKOFF_MS: "1" },
  });
  try {
    await retriedOnce(gw);
    assert.deepEqual(fake.live(), []);
  } finally {
    await gw.close();
    await fake.close();
  }
});

Deno.test("no retry starts past the job's wall-clock budget", async () => {
  await withFaultyBoots((boot) => {
    throw unavailable(boot);
  }, async (gw) => {
    const { task } = await fixtureTask("python_unittest");
    // Attempt 1's boots back off 0.75 s and more each: it ends past the job's 1 s.
    const submitted = await submit(gw, {
      task,
      max_attempts: 3,
      retry_budget: 5,
      retry_backoff_ms: 1500,
      budgets: { job_ms: 1000 },
    });
    const view = await awaitJob(gw, submitted.jobs[0].id, undefined, 60_000);
    assert.deepEqual(
      [view.phase, view.reason, view.outcome, view.attempt],
      ["failed", "sandbox_unavailable", "infra", 1],
    );
  });
});
