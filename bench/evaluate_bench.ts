/**
 * `deno task bench` (third part): how long an evaluation takes on the local backend, phase by
 * phase, how many a process finishes per second as more run at once, and what proving a task
 * (`/evaluate/validate`) costs, first and kept. The fixture tasks' gold patches, real bubblewrap,
 * git, python3 and node.
 *
 * Environment: BENCH_EVAL_ROUNDS=N (default 5 per fixture), BENCH_EVAL_CONCURRENCY=1,2,4,10;
 * `BENCH_FAST=1` (see `_harness.ts`): 1 round, 1 and 2 at once, 3 asks of a kept verdict.
 *
 * @module
 */
import {
  evaluate,
  type EvaluationResult,
  FIXTURE_TASKS_DIR,
  keptVerdicts,
  loadJudgers,
  Slots,
  TaskSchema,
  type TaskValidation,
  type ValidateDeps,
  validateTask,
} from "../lib/evaluate/mod.ts";
import { LocalBackend } from "../lib/sandbox/mod.ts";
import { isFast, median, setting } from "./_harness.ts";

const ROUNDS = Number(setting("BENCH_EVAL_ROUNDS", 5, 1));
const LEVELS = setting("BENCH_EVAL_CONCURRENCY", "1,2,4,10", "1,2").split(",").map(Number);
/** Asks of a task already proven, answered from its kept verdict. */
const KEPT_ROUNDS = isFast() ? 3 : 20;
const FIXTURES = ["python_unittest", "python_pytest", "node_test"];

const root = await Deno.makeTempDir({ prefix: "bench-eval-" });
const backend = new LocalBackend({ root: `${root}/sandboxes` });
const deps = {
  backend,
  judgers: await loadJudgers({}, "tests", Deno.cwd()),
  defaultJudger: "tests",
  timeoutMs: 120_000,
  outputBytes: 1024 * 1024,
  cacheDir: `${root}/cache`,
};
const tasks = await Promise.all(FIXTURES.map(async (name) => ({
  name,
  task: TaskSchema.parse(
    JSON.parse(await Deno.readTextFile(`${FIXTURE_TASKS_DIR}${name}/task.json`)),
  ),
  patch: await Deno.readTextFile(`${FIXTURE_TASKS_DIR}${name}/gold.patch`),
})));

/**
 * What proving a task costs: its tests twice at base and twice with the gold patch (four sandboxes,
 * run two at a time here), and a second ask answered from the kept verdict (a store read).
 */
async function validation(): Promise<void> {
  const kv = await Deno.openKv(":memory:");
  try {
    const options = { ttlMs: 600_000, holder: "bench", leaseTtlMs: 5000, waitMs: 600_000 };
    const slots = new Slots(2);
    const validating: ValidateDeps = {
      ...deps,
      validations: keptVerdicts<TaskValidation>(kv, "validation", options),
      slot: (work) => slots.run(work),
    };
    console.log("Validating a task (2 runs at base, 2 with its gold patch, 2 at a time), ms:");
    console.log(`  task               first  kept (median of ${KEPT_ROUNDS})`);
    for (const { name, task, patch } of tasks) {
      const gold = { patch, source: "request" as const };
      const started = performance.now();
      const { verdict } = await validateTask(validating, { task, gold });
      if (!verdict.valid) throw new Error(`${name}: ${verdict.problems.join("; ")}`);
      const first = performance.now() - started;
      const kept: number[] = [];
      for (let round = 0; round < KEPT_ROUNDS; round++) {
        const at = performance.now();
        if (!(await validateTask(validating, { task, gold })).kept) throw new Error("not kept");
        kept.push(performance.now() - at);
      }
      console.log(
        `  ${name.padEnd(17)} ${String(Math.round(first)).padStart(6)}  ${
          median(kept).toFixed(2).padStart(6)
        }  (${Math.round(first / median(kept))}× the kept)`,
      );
    }
  } finally {
    kv.close();
  }
}

async function once(index: number): Promise<EvaluationResult> {
  const { task, patch, name } = tasks[index % tasks.length];
  const result = await evaluate(deps, { task, patch });
  if (result.score !== 1) throw new Error(`${name}: gold scored ${result.score}`);
  return result;
}

try {
  await once(0); // builds the fixture repositories and checks bubblewrap once
  console.log("Evaluation on the local backend (bubblewrap), gold patches, ms (median):");
  console.log("  task               boot  apply  tests  total");
  for (const [index, { name }] of tasks.entries()) {
    const runs: EvaluationResult[] = [];
    for (let round = 0; round < ROUNDS; round++) runs.push(await once(index));
    const col = (pick: (r: EvaluationResult) => number) =>
      String(Math.round(median(runs.map(pick)))).padStart(5);
    console.log(
      `  ${name.padEnd(17)} ${col((r) => r.timings.boot_ms)}  ${col((r) => r.timings.apply_ms)}  ${
        col((r) => r.timings.test_ms)
      }  ${col((r) => r.duration_ms)}`,
    );
  }
  console.log("Throughput, evaluations finished per second, by evaluations at once:");
  let single = 0;
  for (const level of LEVELS) {
    const count = Math.max(level * 2, 6);
    const started = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: level }, async () => {
      while (next < count) await once(next++);
    }));
    const perSecond = count / ((performance.now() - started) / 1000);
    if (level === LEVELS[0]) single = perSecond;
    console.log(
      `  ${String(level).padStart(3)} at once: ${perSecond.toFixed(1).padStart(5)}/s  (${
        (perSecond / single).toFixed(2)
      }× the first)`,
    );
  }
  await validation();
} finally {
  await backend.close();
  await Deno.remove(root, { recursive: true });
}
