/**
 * Grading a patch: a fresh sandbox with the task's repository at its base commit, the task's
 * pre-commands, the patch applied, the task's tests run (those stages are `grade.ts`'s), the
 * evidence scored by a judger, the sandbox killed — whatever happened on the way.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import type { RepoSource, Sandbox, SandboxBackend } from "../sandbox/mod.ts";
import { type BaseRun, type BaseRuns, UNKEPT_BASE_RUNS } from "./task_verdicts.ts";
import { type Evidence, TASK_FAULTS } from "./evidence.ts";
import { failure } from "./_failure.ts";
import { fixtureRepo } from "./fixture_repos.ts";
import { HARBOR_SANDBOX_DIRS } from "./_harbor_grade.ts";
import { type EvaluationTimings, grade } from "./grade.ts";
import { type Judger, type Reward } from "./judgers.ts";
import { checkPatchPaths, PatchPathError } from "./patch_paths.ts";
import type { MissingEvidence } from "./test_evidence.ts";
import { gradingMode, type Task } from "./task.ts";

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
  readonly timings: EvaluationTimings;
};

/** A task names a judger that is not configured (a bad request, not a bad configuration). */
export class UnknownJudgerError extends RangeError implements CodedError {
  readonly code = "unknown_judger" as const;
  constructor(name: string, known: Iterable<string>) {
    super(`Unknown judger "${name}": configured judgers are ${[...known].join(", ")}`);
    this.name = "UnknownJudgerError";
  }
}

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
  timings: EvaluationTimings = { boot_ms: 0, pre_ms: 0, apply_ms: 0, test_ms: 0 },
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
  timings: EvaluationTimings,
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
    const options = { timeoutMs, outputBytes: deps.outputBytes, signal };
    const graded = await grade(sandbox, task, patch, options, timings);
    return { ...graded, id: sandbox.id };
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
