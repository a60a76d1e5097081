/**
 * The rollout fault step of `deno task bench`: 4 groups of 16 jobs of the python_unittest fixture
 * task (the scripted engine as the model, the mini-swe-agent command harness, the fake E2B), run
 * once without faults and once with 10% of sandbox boots refused, 5% of sandboxes vanishing under
 * a command and the engine down for 20 s, the faults drawn from a fixed seed. It prints the groups
 * that came back complete, attempts per job, the wall-clock against the fault-free run, and the
 * jobs the infrastructure failed after their attempts (0 expected within the budget).
 *
 * `BENCH_FAULT_GROUPS`, `BENCH_FAULT_N` and `BENCH_FAULT_OUTAGE_MS` change the load;
 * `BENCH_FAST=1` (see `_harness.ts`) makes it 1 group × n=2 and a 1 s outage from 0.5 s on.
 *
 * @module
 */
import { startFakeE2b } from "../fixtures/fake_e2b.ts";
import type { Fault } from "../lib/scripted_engine/mod.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../test/_gateway.ts";
import { fixtureTask } from "../test/evaluate/_tasks.ts";
import { FIX_CALC, miniSweAgent, oneCommand, toolCall } from "../test/rollout/_rollout.ts";
import { isFast, setting } from "./_harness.ts";

const GROUPS = Number(setting("BENCH_FAULT_GROUPS", 4, 1));
const N = Number(setting("BENCH_FAULT_N", 16, 2));
const OUTAGE_MS = Number(setting("BENCH_FAULT_OUTAGE_MS", 20_000, 1_000));
/** The faults' seed: the same boots refused, the same sandboxes vanishing, run after run. */
const SEED = 20261127;
/**
 * When the outage starts, after the groups are submitted: with `BENCH_FAST=1`, early enough to
 * strike within the few seconds the jobs take.
 */
const OUTAGE_AFTER_MS = isFast() ? 500 : 3_000;

/** What one run gives. */
interface RunResult {
  readonly wallMs: number;
  readonly complete: number;
  readonly attempts: number[];
  readonly infra: number;
}

/** The groups run to their end on a gateway with (or without) the faults. */
async function run(faulty: boolean): Promise<RunResult> {
  const fake = await startFakeE2b(
    faulty
      ? { faults: { seed: SEED, refuse: { rate: 0.1, status: 503 }, vanish: { rate: 0.05 } } }
      : {},
  );
  let outage: { from: number; to: number } | null = null;
  const faultFor = (): Fault | undefined => {
    const now = Date.now();
    return outage && now >= outage.from && now < outage.to ? { kind: "unavailable" } : undefined;
  };
  const gw = await startGateway({
    script: oneCommand(FIX_CALC, "Fixed.", undefined, (command) => toolCall("bash", { command })),
    worker: true,
    faultFor,
    // Its workers stop with it: shared ones would keep this process alive once it is done.
    ownWorkers: true,
    env: {
      SANDBOX_BACKEND: "e2b",
      ...fake.env,
      E2B_BOOT_ATTEMPTS: "1",
      E2B_BOOT_BACKOFF_MS: "1",
      ROLLOUT_CONCURRENCY: "8",
      ROLLOUT_BOOT_CONCURRENCY: "8",
      ROLLOUT_POLL_MS: "100",
    },
  });
  try {
    const { task } = await fixtureTask("python_unittest");
    const agent = await miniSweAgent();
    const started = Date.now();
    if (faulty) {
      outage = { from: started + OUTAGE_AFTER_MS, to: started + OUTAGE_AFTER_MS + OUTAGE_MS };
    }
    const groups: string[] = [];
    for (let g = 0; g < GROUPS; g++) {
      const response = await gw.fetch("/rollout", {
        method: "POST",
        headers: ADMIN_HEADERS,
        body: JSON.stringify({
          task,
          n: N,
          agent,
          max_attempts: 8,
          retry_budget: 6 * N,
          retry_backoff_ms: 1000,
        }),
      });
      if (response.status !== 202) throw new Error(`submit: ${await response.text()}`);
      groups.push((await response.json()).group_id);
    }
    for (;;) {
      const listings = await Promise.all(groups.map((id) => listing(gw, id)));
      const jobs = listings.flatMap((group) => group.jobs);
      if (jobs.every((job) => ["done", "failed", "aborted"].includes(job.phase))) {
        return {
          wallMs: Date.now() - started,
          complete: listings.filter((group) => group.complete).length,
          attempts: jobs.map((job) => job.attempt),
          infra: jobs.filter((job) => job.outcome === "infra").length,
        };
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await gw.close();
    await fake.close();
  }
}

/** A group's listing. */
async function listing(
  gw: TestGateway,
  id: string,
): Promise<
  {
    complete: boolean;
    jobs: { phase: string; attempt: number; outcome: string | null }[];
  }
> {
  const response = await gw.fetch(`/rollout?group_id=${id}`, { headers: ADMIN_HEADERS });
  return await response.json();
}

const clean = await run(false);
const faulty = await run(true);
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const line = (name: string, result: RunResult) =>
  `  ${name.padEnd(12)} ${String(result.complete).padStart(4)}/${GROUPS}   ${
    mean(result.attempts).toFixed(2).padStart(6)
  } ${String(Math.max(...result.attempts)).padStart(4)}   ${
    (result.wallMs / 1000).toFixed(1).padStart(6)
  } s   ${String(result.infra).padStart(4)}`;
console.log(
  `Rollout faults — ${GROUPS} groups × n=${N} (python_unittest, mini-swe-agent, fake E2B), ` +
    `seed ${SEED}; faults: 10% boots refused, 5% sandboxes vanish, engine down ${
      OUTAGE_MS / 1000
    } s`,
);
console.log("  run          complete   attempts/job   wall-clock   infra-failed jobs");
console.log("                          mean  max");
console.log(line("fault-free", clean));
console.log(line("faults", faulty));
console.log(
  `  wall-clock with faults: ${(faulty.wallMs / clean.wallMs).toFixed(2)}× the fault-free run`,
);
