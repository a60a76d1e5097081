/**
 * Grading a patch: a fresh sandbox with the task's repository at its base commit, the task's
 * pre-commands, the patch applied, the task's tests run, the evidence scored by a judger, the
 * sandbox killed — whatever happened on the way.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  type ExecOptions,
  type ExecResult,
  interleaved,
  type RepoSource,
  type Sandbox,
  type SandboxBackend,
} from "../sandbox/mod.ts";
import { type BaseRun, type BaseRuns, UNKEPT_BASE_RUNS } from "./task_verdicts.ts";
import { type EvaluationReason, type Evidence, logTail, TASK_FAULTS } from "./evidence.ts";
import { fixtureRepo } from "./fixture_repos.ts";
import {
  HARBOR_SANDBOX_DIRS,
  HARBOR_TEST_COMMAND,
  HARBOR_VERIFIER_RIGHTS,
  prepareHarborTests,
  readHarborReward,
  verifierFinished,
} from "./_harbor_grade.ts";
import { type Judger, type Reward } from "./judgers.ts";
import { checkPatchPaths, PatchPathError, patchPaths } from "./patch_paths.ts";
import { restoreProtected } from "./protect.ts";
import { type MissingEvidence, missingEvidence } from "./test_evidence.ts";
import { parseTestOutput } from "./test_report.ts";
import { shellQuote } from "../shell/mod.ts";
import { gradingMode, runnerCommand, scriptCommand, type Task } from "./task.ts";

/** What an evaluation needs. */
export interface EvaluateDeps {
  readonly backend: SandboxBackend;
  readonly judgers: ReadonlyMap<string, Judger>;
  readonly defaultJudger: string;
  /** Time limit of an evaluation whose task gives none, in milliseconds. */
  readonly timeoutMs: number;
  /** Bytes of output kept per command and stream. */
  readonly outputBytes: number;
  /** Host folder where fixture repositories are built. */
  readonly cacheDir: string;
  /** Counts evaluations by outcome. */
  readonly metrics?: GatewayMetrics;
  /**
   * Where the base commit's runs of tasks are kept, the control of a run without evidence that
   * its tests ran (none: each is run when needed).
   */
  readonly baseRuns?: BaseRuns;
}

/** One evaluation request. */
export interface EvaluateRequest {
  readonly task: Task;
  /** A unified diff against the base commit; empty for "no change". */
  readonly patch: string;
  /** Aborted when the caller leaves: the sandbox is killed and the evaluation throws. */
  readonly signal?: AbortSignal;
}

/**
 * The result of `/evaluate`: the judger's reward over the evidence, with timings. `score` is
 * `null` when the evidence is that the task is at fault ({@linkcode TASK_FAULTS}): no judger is
 * asked for a score of tests that never ran.
 */
export type EvaluationResult = Evidence & Omit<Reward, "score"> & {
  readonly score: number | null;
  readonly duration_ms: number;
  readonly judger: string;
  readonly sandbox: { readonly backend: string; readonly id: string | null };
  /** Milliseconds per phase: sandbox boot, pre-commands, patch, tests. */
  readonly timings: { boot_ms: number; pre_ms: number; apply_ms: number; test_ms: number };
};

/** A task names a judger that is not configured (a bad request, not a bad configuration). */
export class UnknownJudgerError extends RangeError implements CodedError {
  readonly code = "unknown_judger" as const;
  constructor(name: string, known: Iterable<string>) {
    super(`Unknown judger "${name}": configured judgers are ${[...known].join(", ")}`);
    this.name = "UnknownJudgerError";
  }
}

/** Where the evaluation's own files go inside the sandbox's scratch folder. */
const EVAL_DIR = "rollout_eval";

/**
 * Evaluates `patch` for `task` in a fresh sandbox.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { evaluate } from "./evaluate.ts";
 * import { TaskSchema } from "./task.ts";
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const task = TaskSchema.parse({
 *   repo: "fixture:python_unittest",
 *   base_commit: "1bdf00de",
 *   eval_cmd: "true",
 * });
 * const result = await evaluate(deps.evaluation, { task, patch: "" });
 * assert.equal(result.score, 1); // the command passed
 * await deps.close();
 * ```
 * @throws {UnknownJudgerError} for a judger that is not configured; sandbox and repository
 * errors ({@linkcode SandboxUnavailableError}, {@linkcode RepoError}) as the backend raises them.
 */
export async function evaluate(
  deps: EvaluateDeps,
  request: EvaluateRequest,
): Promise<EvaluationResult> {
  const judgerName = request.task.judger ?? deps.defaultJudger;
  const judger = deps.judgers.get(judgerName);
  if (!judger) throw new UnknownJudgerError(judgerName, deps.judgers.keys());
  try {
    return await evaluateWith(deps, request, judger);
  } catch (error) {
    deps.metrics?.evaluations.inc("error");
    throw error;
  }
}

/** Evaluates with `judger` (the task's), counting the outcome by the evidence's reason. */
async function evaluateWith(
  deps: EvaluateDeps,
  request: EvaluateRequest,
  judger: Judger,
): Promise<EvaluationResult> {
  const { task, signal } = request;
  const patch = request.patch.length > 0 && !request.patch.endsWith("\n")
    ? `${request.patch}\n`
    : request.patch;
  const started = performance.now();
  const timings = { boot_ms: 0, pre_ms: 0, apply_ms: 0, test_ms: 0 };
  const run = await runTaskTests(deps, task, patch, signal, timings);
  const evidence = run.missing === null
    ? run.evidence
    : await blame(deps, task, patch, run.evidence, run.missing, signal);
  // The judger's own fields sit beside the evidence, the score first; tests that never ran
  // because of the task have no score.
  const { score, ...extra }: { score: number | null } = TASK_FAULTS.has(evidence.reason)
    ? { score: null }
    : await judger.judge({ task, patch, evidence });
  deps.metrics?.evaluations.inc(evidence.reason);
  return {
    score,
    ...evidence,
    ...extra,
    duration_ms: Math.round(performance.now() - started),
    judger: judger.name,
    sandbox: { backend: deps.backend.name, id: run.id },
    timings,
  };
}

/** One run of a task's tests: its evidence, what the evidence lacks, and its sandbox's id. */
export interface TestsRun {
  readonly evidence: Evidence;
  /** What the evidence lacks to show that the tests ran, once they were run; else `null`. */
  readonly missing: MissingEvidence | null;
  readonly id: string | null;
}

/**
 * Runs `task`'s tests with `patch` applied (`""`: none) in a fresh sandbox, killed whatever
 * happens, and no judger asked: the evidence alone. A patch touching paths outside the repository
 * is never applied (`patch_rejected`).
 */
export async function runTaskTests(
  deps: EvaluateDeps,
  task: Task,
  patch: string,
  signal?: AbortSignal,
  timings: EvaluationResult["timings"] = { boot_ms: 0, pre_ms: 0, apply_ms: 0, test_ms: 0 },
): Promise<TestsRun> {
  try {
    checkPatchPaths(patch);
  } catch (error) {
    if (!(error instanceof PatchPathError)) throw error;
    return { evidence: failure("patch_rejected", error.message, false), missing: null, id: null };
  }
  return await runTests(deps, task, patch, timings, signal);
}

/** Grades `patch` for `task` in a fresh sandbox, killed whatever happens. */
async function runTests(
  deps: EvaluateDeps,
  task: Task,
  patch: string,
  timings: EvaluationResult["timings"],
  signal: AbortSignal | undefined,
): Promise<TestsRun> {
  let sandbox: Sandbox | null = null;
  try {
    const repo = await repoSource(task, deps.cacheDir);
    const timeoutMs = task.timeout_ms ?? deps.timeoutMs;
    const booting = performance.now();
    sandbox = await deps.backend.create({
      repo,
      commit: task.base_commit,
      template: task.template,
      metadata: { ...task.metadata, purpose: "evaluate" },
      network: false,
      writableDirs: gradingMode(task) === "harbor" ? HARBOR_SANDBOX_DIRS : undefined,
      // The sandbox outlives the evaluation's limit only long enough to be killed cleanly.
      lifetimeMs: timeoutMs + 60_000,
      signal,
    });
    timings.boot_ms = Math.round(performance.now() - booting);
    const graded = await grade(sandbox, task, patch, deps, timeoutMs, timings, signal);
    const ran = "evidence" in graded ? graded : { evidence: graded, missing: null };
    return { ...ran, id: sandbox.id };
  } finally {
    await sandbox?.kill();
  }
}

/**
 * Whose fault a run without evidence that the tests ran is: the task's when the base commit's
 * run (no patch) has none either, or the patch's, which stopped tests that run without it (then
 * the evidence keeps its own reason, a zero the judger gives). A run without a patch is the base
 * commit's run.
 */
async function blame(
  deps: EvaluateDeps,
  task: Task,
  patch: string,
  evidence: Evidence,
  missing: MissingEvidence,
  signal: AbortSignal | undefined,
): Promise<Evidence> {
  if (patch.trim().length === 0) {
    return { ...evidence, reason: missing.reason, detail: missing.detail };
  }
  const runs = deps.baseRuns ?? UNKEPT_BASE_RUNS;
  const base = await runs.get(
    task,
    deps.backend.name,
    async () => baseRunOf(await runTaskTests(deps, task, "", signal)),
  );
  const base_run = { reason: base.reason, detail: base.missing?.detail ?? null };
  if (base.missing !== null) {
    const same = base.missing.detail === missing.detail;
    return {
      ...evidence,
      reason: base.missing.reason,
      detail: same
        ? `${missing.detail} (at the base commit too)`
        : `${missing.detail}; at the base commit: ${base.missing.detail}`,
      base_run,
    };
  }
  return {
    ...evidence,
    // A pass with no test run is no pass.
    reason: evidence.reason === "passed" ? "tests_failed" : evidence.reason,
    detail: `No test ran with the patch (${missing.detail}); ` +
      (base.gold
        ? `with the task's gold patch they do: the task is not at fault`
        : `at the base commit they do (${base.reason}): the patch stopped them`),
    base_run,
  };
}

/**
 * The base run verdict of a run of the tests with no patch: what it lacks to show that the tests
 * ran, a task fault counting as such.
 */
export function baseRunOf(run: TestsRun): BaseRun {
  const { reason, detail } = run.evidence;
  const fault = run.missing ??
    (TASK_FAULTS.has(reason) ? { reason, detail: detail ?? reason } : null);
  return { missing: fault, reason, at: Date.now() };
}

/**
 * Runs the pre-commands, applies the patch, puts protected paths back and applies the task's
 * test patch, then runs the tests, all within one time limit.
 */
async function grade(
  sandbox: Sandbox,
  task: Task,
  patch: string,
  deps: EvaluateDeps,
  timeoutMs: number,
  timings: EvaluationResult["timings"],
  signal: AbortSignal | undefined,
): Promise<Graded> {
  const deadline = performance.now() + timeoutMs;
  const run = async (command: string, as: Pick<ExecOptions, "user" | "readOnly"> = {}) => {
    const remaining = Math.max(1, Math.round(deadline - performance.now()));
    const result = await sandbox.exec(interleaved(command), {
      timeoutMs: remaining,
      env: task.env,
      outputBytes: deps.outputBytes,
      signal,
      ...as,
    });
    signal?.throwIfAborted();
    return result;
  };
  const scratch = `${sandbox.tmpdir}/${EVAL_DIR}`;

  let phase = performance.now();
  for (const [index, command] of task.pre_commands.entries()) {
    const result = await run(command);
    if (result.timedOut) {
      return timedOut(result, `pre_commands[${index}] ran past the time limit`, false);
    }
    if (result.exitCode !== 0) {
      return failure(
        "pre_command_failed",
        `pre_commands[${index}] exited with ${result.exitCode}: ${command.slice(0, 200)}`,
        false,
        result,
      );
    }
  }
  timings.pre_ms = Math.round(performance.now() - phase);

  phase = performance.now();
  if (patch.trim().length > 0) {
    const path = `${scratch}/patch.diff`;
    await sandbox.writeFile(path, patch);
    const result = await run(`git apply --verbose --whitespace=nowarn ${shellQuote(path)}`);
    if (result.timedOut) return timedOut(result, "git apply ran past the time limit", false);
    if (result.exitCode !== 0) {
      return failure("patch_failed", `git apply: ${applyErrors(result.stdout)}`, false, result);
    }
  }
  let tampered: string[] = [];
  const guarded = [
    ...task.protected_paths,
    ...(task.test_patch ? patchPaths(task.test_patch) : []),
  ];
  if (guarded.length > 0) {
    const restored = await restoreProtected(run, [...new Set(guarded)]);
    if ("failed" in restored) {
      if (restored.failed.timedOut) {
        return timedOut(restored.failed, "restoring protected paths ran past the time limit", true);
      }
      throw new Error(
        `Cannot restore protected paths (${restored.step}): ${restored.failed.stdout.slice(-500)}`,
      );
    }
    tampered = restored.tampered;
  }
  if (task.test_patch) {
    const path = `${scratch}/test.diff`;
    await sandbox.writeFile(
      path,
      task.test_patch.endsWith("\n") ? task.test_patch : `${task.test_patch}\n`,
    );
    const result = await run(`git apply --verbose --whitespace=nowarn ${shellQuote(path)}`);
    if (result.timedOut) return timedOut(result, "git apply ran past the time limit", true);
    if (result.exitCode !== 0) {
      const detail = `test_patch: git apply: ${applyErrors(result.stdout)}`;
      return { ...failure("test_patch_failed", detail, true, result), tampered };
    }
  }
  timings.apply_ms = Math.round(performance.now() - phase);

  phase = performance.now();
  const mode = gradingMode(task);
  let command: string;
  if (mode === "eval_cmd") {
    command = task.eval_cmd!;
  } else if (mode === "f2p_script") {
    const path = `${scratch}/${task.f2p_filename}`;
    await sandbox.writeFile(path, task.f2p_script!);
    command = (task.f2p_cmd ?? scriptCommand(task.f2p_filename)!).replaceAll(
      "{script}",
      shellQuote(path),
    );
  } else if (mode === "harbor") {
    // The task's own tests, written after the patch: nothing of the patched tree's is run as them.
    const stuck = await prepareHarborTests(sandbox, task.harbor_tests!, run);
    if (stuck) return timedOut(stuck, "writing /tests ran past the time limit", true);
    command = HARBOR_TEST_COMMAND;
  } else {
    const ids = [...task.fail_to_pass!, ...task.pass_to_pass].map(shellQuote).join(" ");
    command = (task.test_cmd ?? runnerCommand(task.runner!)).replaceAll("{tests}", ids);
  }
  // Harbor's verifier runs as its container's root, whose reward writes no file mode blocks, with
  // its tests read-only: the code under test it runs cannot keep it from writing the reward.
  const result = await run(command, mode === "harbor" ? HARBOR_VERIFIER_RIGHTS : {});
  timings.test_ms = Math.round(performance.now() - phase);
  if (result.timedOut) return timedOut(result, "the tests ran past the time limit", true);
  const report = parseTestOutput(result.stdout);
  const asked = (passed: boolean, rewardError: string | null) =>
    missingEvidence({
      mode,
      task,
      exitCode: result.exitCode,
      output: result.stdout,
      report,
      rewardError,
      passed,
    });
  if (mode === "harbor") {
    // The score is the reward file's, never the exit status: `reason` says whether it is > 0.
    // A verifier stopped by a signal (the code under test killing it) wrote no reward of its own.
    const reward = verifierFinished(result) ?? await readHarborReward(sandbox, signal);
    const none = "error" in reward;
    const reason = none ? "no_reward" : reward.reward > 0 ? "passed" : "tests_failed";
    return {
      evidence: {
        applied_cleanly: true,
        reason,
        detail: none ? reward.error : null,
        tests: report,
        tampered,
        exit_code: result.exitCode,
        log_tail: logTail(result.stdout),
        ...(none ? {} : { verifier: reward }),
      },
      missing: asked(reason === "passed", none ? reward.error : null),
    };
  }

  let tests = report;
  let passed = result.exitCode === 0;
  if (mode === "f2p_script") {
    // pytest names the script by its path from the work tree; the file name is what tells.
    const short = (name: string) => name.replace(/^.*\/(?=[^/]*::)/, "");
    tests = { passed: report.passed.map(short), failed: report.failed.map(short) };
  } else if (mode === "test_lists") {
    const ok = new Set(report.passed);
    const bad = new Set(report.failed);
    const listed = [...new Set([...task.fail_to_pass!, ...task.pass_to_pass])];
    const good = (test: string) => ok.has(test) && !bad.has(test);
    tests = { passed: listed.filter(good), failed: listed.filter((test) => !good(test)) };
    passed = tests.failed.length === 0;
  }
  return {
    evidence: {
      applied_cleanly: true,
      reason: passed ? "passed" : "tests_failed",
      detail: null,
      tests,
      tampered,
      exit_code: result.exitCode,
      log_tail: logTail(result.stdout),
    },
    missing: asked(passed, null),
  };
}

/** A run's evidence, and what it lacks to show that the tests ran (once the tests ran). */
type Graded = Evidence | { readonly evidence: Evidence; readonly missing: MissingEvidence | null };

/**
 * The repository of a task as a sandbox source, with the task's work-tree alias; fixtures are
 * built under `cacheDir` first.
 */
export async function repoSource(task: Task, cacheDir: string): Promise<RepoSource> {
  const repo = task.repo;
  const alias = task.workdir_alias === undefined ? {} : { alias: task.workdir_alias };
  if (repo === undefined) return { kind: "image", dir: task.repo_dir!, ...alias };
  if (repo.startsWith("fixture:")) {
    const path = await fixtureRepo(repo.slice("fixture:".length), cacheDir);
    return { kind: "path", path, ...alias };
  }
  return repo.startsWith("/")
    ? { kind: "path", path: repo, ...alias }
    : { kind: "url", url: repo, ...alias };
}

function failure(
  reason: EvaluationReason,
  detail: string,
  appliedCleanly: boolean,
  result?: ExecResult,
): Evidence {
  return {
    applied_cleanly: appliedCleanly,
    reason,
    detail,
    tests: { passed: [], failed: [] },
    tampered: [],
    exit_code: result?.exitCode ?? null,
    log_tail: logTail(result?.stdout ?? ""),
  };
}

function timedOut(result: ExecResult, detail: string, appliedCleanly: boolean): Evidence {
  return failure("timeout", detail, appliedCleanly, result);
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
