/**
 * `deno task bench` (third part): how long an evaluation takes on the local backend, phase by
 * phase, and how many a process finishes per second as more run at once. The fixture tasks'
 * gold patches, real bubblewrap, git, python3 and node.
 *
 * Environment: BENCH_EVAL_ROUNDS=N (default 5 per fixture), BENCH_EVAL_CONCURRENCY=1,2,4,10.
 *
 * @module
 */
import {
  evaluate,
  type EvaluationResult,
  FIXTURE_TASKS_DIR,
  loadJudgers,
  TaskSchema,
} from "../lib/evaluate/mod.ts";
import { LocalBackend } from "../lib/sandbox/mod.ts";
import { median } from "./_harness.ts";

const ROUNDS = Number(Deno.env.get("BENCH_EVAL_ROUNDS") ?? 5);
const LEVELS = (Deno.env.get("BENCH_EVAL_CONCURRENCY") ?? "1,2,4,10").split(",").map(Number);
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
} finally {
  await backend.close();
  await Deno.remove(root, { recursive: true });
}
