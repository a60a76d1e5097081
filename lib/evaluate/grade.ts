/**
 * Grading a patch in the sandbox booted for it, as named stages within one time limit: the task's
 * pre-commands ({@linkcode runPreCommands}); the patch applied, protected paths put back and the
 * task's test patch applied over it ({@linkcode applyPatches}); the test command of the task's
 * grading mode ({@linkcode testCommand}); its run; and the run judged into evidence
 * (`run_evidence.ts`). A stage that stops the grading gives the evidence of why.
 *
 * @module
 */
import { type ExecOptions, type ExecResult, interleaved, type Sandbox } from "../sandbox/mod.ts";
import {
  HARBOR_TEST_COMMAND,
  HARBOR_VERIFIER_RIGHTS,
  prepareHarborTests,
  readHarborReward,
  verifierFinished,
} from "./_harbor_grade.ts";
import { failure, timedOut } from "./_failure.ts";
import type { Evidence } from "./evidence.ts";
import { patchPaths } from "./patch_paths.ts";
import { restoreProtected } from "./protect.ts";
import { evidenceOf, type RunEvidence } from "./run_evidence.ts";
import { type GradingMode, gradingMode, runnerCommand, scriptCommand, type Task } from "./task.ts";
import { shellQuote } from "../shell/mod.ts";

/** Where the evaluation's own files go inside the sandbox's scratch folder. */
const EVAL_DIR = "rollout_eval";

/** Milliseconds per phase of an evaluation: sandbox boot, pre-commands, patch, tests. */
export interface EvaluationTimings {
  boot_ms: number;
  pre_ms: number;
  apply_ms: number;
  test_ms: number;
}

/** What grading needs beside its sandbox and task. */
export interface GradeOptions {
  /** The time limit every command of the grading shares, in milliseconds. */
  readonly timeoutMs: number;
  /** Bytes of output kept per command and stream. */
  readonly outputBytes: number;
  /** Aborted when the caller leaves: the command running is killed and grading throws. */
  readonly signal?: AbortSignal;
}

/**
 * Runs a command in the work tree, as `as` says (a user, read-only folders), within what is left
 * of the grading's time limit; it throws once the grading's signal is aborted.
 */
export type GradeRun = (
  command: string,
  as?: Pick<ExecOptions, "user" | "readOnly">,
) => Promise<ExecResult>;

/** A stage that stopped the grading, and the evidence of why. */
export interface GradeStopped {
  readonly stopped: Evidence;
}

/**
 * Runs the pre-commands, applies the patch, puts protected paths back and applies the task's
 * test patch, then runs the tests and judges the run, all within one time limit. `timings` gets
 * each phase that ended.
 */
export async function grade(
  sandbox: Sandbox,
  task: Task,
  patch: string,
  options: GradeOptions,
  timings: EvaluationTimings,
): Promise<RunEvidence> {
  const run = runWithin(sandbox, task, options);
  const scratch = `${sandbox.tmpdir}/${EVAL_DIR}`;

  let phase = performance.now();
  const pre = await runPreCommands(task, run);
  if (pre !== null) return { evidence: pre.stopped, missing: null };
  timings.pre_ms = Math.round(performance.now() - phase);

  phase = performance.now();
  const applied = await applyPatches(sandbox, task, patch, run, scratch);
  if ("stopped" in applied) return { evidence: applied.stopped, missing: null };
  timings.apply_ms = Math.round(performance.now() - phase);

  phase = performance.now();
  const mode = gradingMode(task);
  const command = await testCommand(sandbox, task, mode, run, scratch);
  if ("stopped" in command) return { evidence: command.stopped, missing: null };
  // Harbor's verifier runs as its container's root, whose reward writes no file mode blocks, with
  // its tests read-only: the code under test it runs cannot keep it from writing the reward.
  const result = await run(command.command, mode === "harbor" ? HARBOR_VERIFIER_RIGHTS : {});
  timings.test_ms = Math.round(performance.now() - phase);
  if (result.timedOut) {
    return { evidence: timedOut(result, "the tests ran past the time limit", true), missing: null };
  }
  // A verifier stopped by a signal (the code under test killing it) wrote no reward of its own.
  const reward = mode === "harbor"
    ? verifierFinished(result) ?? await readHarborReward(sandbox, options.signal)
    : null;
  return evidenceOf({ mode, task, result, tampered: applied.tampered, reward });
}

/**
 * How grading runs commands in `sandbox`: with the task's environment, each within what is left
 * of `options.timeoutMs` from now.
 */
export function runWithin(sandbox: Sandbox, task: Task, options: GradeOptions): GradeRun {
  const deadline = performance.now() + options.timeoutMs;
  return async (command, as = {}) => {
    const remaining = Math.max(1, Math.round(deadline - performance.now()));
    const result = await sandbox.exec(interleaved(command), {
      timeoutMs: remaining,
      env: task.env,
      outputBytes: options.outputBytes,
      signal: options.signal,
      ...as,
    });
    options.signal?.throwIfAborted();
    return result;
  };
}

/**
 * Runs the task's pre-commands in order: the evidence of the first that failed
 * (`pre_command_failed`) or ran past the time limit, or `null` when all passed.
 */
export async function runPreCommands(task: Task, run: GradeRun): Promise<GradeStopped | null> {
  for (const [index, command] of task.pre_commands.entries()) {
    const result = await run(command);
    if (result.timedOut) {
      return { stopped: timedOut(result, `pre_commands[${index}] ran past the time limit`, false) };
    }
    if (result.exitCode !== 0) {
      return {
        stopped: failure(
          "pre_command_failed",
          `pre_commands[${index}] exited with ${result.exitCode}: ${command.slice(0, 200)}`,
          false,
          result,
        ),
      };
    }
  }
  return null;
}

/**
 * Applies `patch` (none when blank), puts the task's protected paths and the paths of its test
 * patch back as the base commit has them, and applies the test patch: the paths the patch had
 * changed (`tampered`), or the evidence of the step that stopped (`patch_failed`,
 * `test_patch_failed`, `timeout`). Scratch files go under `scratch`.
 *
 * @throws {Error} when protected paths cannot be put back (a broken sandbox, not the patch's
 * fault).
 */
export async function applyPatches(
  sandbox: Sandbox,
  task: Task,
  patch: string,
  run: GradeRun,
  scratch: string,
): Promise<{ readonly tampered: string[] } | GradeStopped> {
  if (patch.trim().length > 0) {
    const result = await gitApply(sandbox, run, `${scratch}/patch.diff`, patch);
    if (result.timedOut) {
      return { stopped: timedOut(result, "git apply ran past the time limit", false) };
    }
    if (result.exitCode !== 0) {
      const detail = `git apply: ${applyErrors(result.stdout)}`;
      return { stopped: failure("patch_failed", detail, false, result) };
    }
  }
  const restored = await restoreGuarded(task, run);
  if ("stopped" in restored) return restored;
  const { tampered } = restored;
  if (task.test_patch) {
    const testPatch = task.test_patch.endsWith("\n") ? task.test_patch : `${task.test_patch}\n`;
    const result = await gitApply(sandbox, run, `${scratch}/test.diff`, testPatch);
    if (result.timedOut) {
      return { stopped: timedOut(result, "git apply ran past the time limit", true) };
    }
    if (result.exitCode !== 0) {
      const detail = `test_patch: git apply: ${applyErrors(result.stdout)}`;
      return { stopped: { ...failure("test_patch_failed", detail, true, result), tampered } };
    }
  }
  return { tampered };
}

/** Writes `diff` to `path` in the sandbox and applies it with `git apply`. */
async function gitApply(
  sandbox: Sandbox,
  run: GradeRun,
  path: string,
  diff: string,
): Promise<ExecResult> {
  await sandbox.writeFile(path, diff);
  return await run(`git apply --verbose --whitespace=nowarn ${shellQuote(path)}`);
}

/**
 * Puts the task's protected paths and its test patch's paths back as the base commit has them:
 * those the patch changed, or the evidence of a restoration past the time limit.
 */
async function restoreGuarded(
  task: Task,
  run: GradeRun,
): Promise<{ readonly tampered: string[] } | GradeStopped> {
  const guarded = [
    ...task.protected_paths,
    ...(task.test_patch ? patchPaths(task.test_patch) : []),
  ];
  if (guarded.length === 0) return { tampered: [] };
  const restored = await restoreProtected(run, [...new Set(guarded)]);
  if ("failed" in restored) {
    if (restored.failed.timedOut) {
      const detail = "restoring protected paths ran past the time limit";
      return { stopped: timedOut(restored.failed, detail, true) };
    }
    throw new Error(
      `Cannot restore protected paths (${restored.step}): ${restored.failed.stdout.slice(-500)}`,
    );
  }
  return { tampered: restored.tampered };
}

/**
 * The command that runs the task's tests in its grading `mode`, with what it needs written first:
 * `eval_cmd` as given; a test script written under `scratch` and run by `f2p_cmd` or its default
 * command; a Harbor task's tests written to `/tests` (the evidence of a timeout, if that ran past
 * the limit) and its verifier; or the test lists' runner over their ids.
 *
 * @throws {Error} when a Harbor task's folders cannot be made.
 */
export async function testCommand(
  sandbox: Sandbox,
  task: Task,
  mode: GradingMode,
  run: GradeRun,
  scratch: string,
): Promise<{ readonly command: string } | GradeStopped> {
  if (mode === "eval_cmd") return { command: task.eval_cmd! };
  if (mode === "f2p_script") {
    const path = `${scratch}/${task.f2p_filename}`;
    await sandbox.writeFile(path, task.f2p_script!);
    const command = task.f2p_cmd ?? scriptCommand(task.f2p_filename)!;
    return { command: command.replaceAll("{script}", shellQuote(path)) };
  }
  if (mode === "harbor") {
    // The task's own tests, written after the patch: nothing of the patched tree's is run as them.
    const stuck = await prepareHarborTests(sandbox, task.harbor_tests!, run);
    if (stuck) return { stopped: timedOut(stuck, "writing /tests ran past the time limit", true) };
    return { command: HARBOR_TEST_COMMAND };
  }
  const ids = [...task.fail_to_pass!, ...task.pass_to_pass].map(shellQuote).join(" ");
  return { command: (task.test_cmd ?? runnerCommand(task.runner!)).replaceAll("{tests}", ids) };
}

/** The error lines of `git apply`'s output, or its last lines. */
function applyErrors(output: string): string {
  const lines = output.split("\n").map((line) => line.trim()).filter(Boolean);
  // "while searching for:" only introduces the context lines it could not find.
  const errors = lines.filter((line) =>
    /^(?:error|fatal):/.test(line) && !/while searching for:$/.test(line)
  );
  return (errors.length > 0 ? errors : lines.slice(-3)).join(" | ").slice(0, 2000);
}
