/**
 * The whole bench (`deno task bench`) run small (`BENCH_FAST=1`, a few seconds a step): every
 * step runs, prints its figures and exits on its own, so a step that hangs or throws fails here.
 */
import assert from "node:assert/strict";

/** The repository's root, where `deno task bench` is defined. */
const ROOT = new URL("../../", import.meta.url).pathname;
/**
 * What each step of `deno task bench` prints first, in the task's order: the output names every
 * step.
 */
const HEADINGS = [
  "Rollout Gateway turn bench",
  "Concurrency sweep",
  "Evaluation on the local backend",
  "Rollout Gateway stream bench",
  "Load sweep",
  "Head of line",
  "placement:",
  "Rollout Gateway store bench",
  "Rollout faults",
  "Rollout Gateway viewer bench",
  "Rollout Gateway routed experts (R3) bench",
  "Rollout Gateway prefix-tree bench",
];
/**
 * How long the fast bench may take before it is ended and counted as hung: it takes about 135 s on
 * the 2-core development machine alone, over 200 s beside the other test files.
 */
const LIMIT_MS = 360_000;

Deno.test("deno task bench runs every step small (BENCH_FAST=1) and each one exits", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "bench"],
    cwd: ROOT,
    env: { BENCH_FAST: "1" },
    stdout: "piped",
    stderr: "piped",
    // A process group of its own, so that the guard ends the step running and what it started.
    detached: true,
  }).spawn();
  let hung = false;
  const guard = setTimeout(() => {
    hung = true;
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* already exited */ }
  }, LIMIT_MS);
  const { code, stdout, stderr } = await child.output().finally(() => clearTimeout(guard));
  const decoder = new TextDecoder();
  const output = `${decoder.decode(stdout)}\n--- stderr ---\n${decoder.decode(stderr)}`;
  assert.ok(!hung, `the fast bench ran over ${LIMIT_MS / 1000} s and was ended:\n${output}`);
  assert.equal(code, 0, output);
  let from = 0;
  for (const heading of HEADINGS) {
    const at = output.indexOf(heading, from);
    assert.ok(at >= 0, `no "${heading}" after the steps before it:\n${output}`);
    from = at + heading.length;
  }
});
