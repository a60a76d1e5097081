/**
 * Proving a task before sandboxes are spent on it: its tests run twice at the base commit, where
 * they must run (evidence as `test_evidence.ts` reads it) and fail as the task says (its
 * `fail_to_pass` tests failing, its `pass_to_pass` ones passing; a whole run that passes would
 * reward every rollout), and twice with its gold patch when it has one, where everything must
 * pass. A test whose outcome changes between two runs of the same tree is flaky. The verdict is
 * kept in the store by the task's digest (`task_verdicts.ts`): a group of 64 validates once.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import { jsonBytes } from "../limits/mod.ts";
import { type EvaluateDeps, runTaskTests, type TestsRun } from "./evaluate.ts";
import { type EvaluationReason, TASK_FAULTS } from "./evidence.ts";
import type { MissingEvidence } from "./test_evidence.ts";
import { type KeptVerdicts, sha256Hex, taskDigest } from "./task_verdicts.ts";
import { gradingMode, type Task } from "./task.ts";

/** Test ids kept per outcome in a kept run (the counts are whole). */
export const MAX_VALIDATION_IDS = 50;
/** Characters of log kept per run in a verdict. */
export const VALIDATION_LOG_CHARS = 2000;
/** Problems and flaky tests named in a verdict, each; the rest are counted. */
export const MAX_NAMED = 20;
/** Largest verdict kept, in bytes of JSON (a Deno KV value holds at most 64 KiB). */
export const MAX_VERDICT_BYTES = 48 * 1024;
/** Characters a problem's words are cut to. */
const PROBLEM_CHARS = 600;

/** One run of a task's tests during its validation, as the verdict keeps it. */
export interface ValidationRun {
  readonly reason: EvaluationReason;
  readonly detail: string | null;
  /** What the run lacks to show that the tests ran, or `null`. */
  readonly missing: MissingEvidence | null;
  readonly exit_code: number | null;
  /** The first {@linkcode MAX_VALIDATION_IDS} test ids per outcome. */
  readonly tests: { readonly passed: string[]; readonly failed: string[] };
  /** How many tests passed and failed. */
  readonly counts: { readonly passed: number; readonly failed: number };
  /** The end of the test command's output. */
  readonly log_tail: string;
}

/** Where a validation's gold patch came from. */
export type GoldSource = "request" | "solution";

/** A task's validation. Field names are those of `POST /evaluate/validate`'s answer. */
export interface TaskValidation {
  /** No problem and no flaky test: rollouts on it are graded for real. */
  readonly valid: boolean;
  /** What is wrong, in words, first {@linkcode MAX_NAMED}. */
  readonly problems: string[];
  /** Tests whose outcome changed between two runs of the same tree, first {@linkcode MAX_NAMED}. */
  readonly flaky: string[];
  /** How many flaky tests there are in all. */
  readonly flaky_count: number;
  /** The two runs at the base commit. */
  readonly base: readonly ValidationRun[];
  /** The two runs with the gold patch; `null` when there is none. */
  readonly gold: readonly ValidationRun[] | null;
  /** Where the gold patch came from: the request, or a Harbor task's `solution/solve.sh`. */
  readonly gold_source: GoldSource | null;
  /** The digest the verdict is kept by: the task's tests, tree and backend, and the gold patch. */
  readonly digest: string;
  /** The sandbox backend the tests ran on. */
  readonly backend: string;
  /** When it was reached, in milliseconds since the epoch. */
  readonly at: number;
  /** How long reaching it took. */
  readonly duration_ms: number;
}

/**
 * A rollout asked to validate its task first, and the task is not valid: nothing was queued.
 */
export class TaskInvalidError extends Error implements CodedError {
  readonly code = "task_invalid" as const;
  constructor(readonly verdict: TaskValidation) {
    const flaky = verdict.flaky_count === 0
      ? []
      : [`flaky: ${verdict.flaky.slice(0, 5).join(", ")}${verdict.flaky_count > 5 ? ", …" : ""}`];
    super(
      `task: not valid, nothing queued (POST /evaluate/validate shows its runs): ` +
        [...verdict.problems, ...flaky].join("; ").slice(0, 2000),
    );
    this.name = "TaskInvalidError";
  }
}

/** What a validation needs: how tests run, and where verdicts are kept. */
export interface ValidateDeps extends EvaluateDeps {
  /** Kept validations (none: each is run). */
  readonly validations?: KeptVerdicts<TaskValidation>;
  /** Runs one sandbox's work within the process's evaluation slots (none: at once). */
  readonly slot?: <T>(work: () => Promise<T>) => Promise<T>;
}

/** A task to validate, and its known fix. */
export interface ValidateRequest {
  readonly task: Task;
  /**
   * A gold patch, or how to make one (a Harbor task's `solution/solve.sh`, run in a sandbox);
   * `null` when there is none.
   */
  readonly gold:
    | { readonly patch: string; readonly source: GoldSource }
    | { readonly make: () => Promise<{ patch: string } | { error: string }>; readonly key: string }
    | null;
  readonly signal?: AbortSignal;
}

/**
 * The task's validation, kept or reached now, with whether it was kept.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { TaskSchema } from "./task.ts";
 * import { validateTask } from "./validate_task.ts";
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * // A task whose tests pass with no change at all rewards every rollout.
 * const task = TaskSchema.parse({ repo: "fixture:python_unittest", base_commit: "HEAD", eval_cmd: "true" });
 * const { verdict } = await validateTask(deps.evaluation, { task, gold: null });
 * assert.equal(verdict.valid, false);
 * assert.match(verdict.problems[0], /pass at the base commit/);
 * await deps.close();
 * ```
 */
export async function validateTask(
  deps: ValidateDeps,
  request: ValidateRequest,
): Promise<{ verdict: TaskValidation; kept: boolean }> {
  const { task, gold } = request;
  const goldKey = gold === null
    ? ""
    : "key" in gold
    ? gold.key
    : `patch:${await sha256Hex(gold.patch)}`;
  const digest = await taskDigest(task, deps.backend.name, goldKey);
  const reach = () => validate(deps, request, digest);
  if (!deps.validations) return { verdict: await reach(), kept: false };
  const found = await deps.validations.get(digest, reach);
  return { verdict: found.verdict, kept: found.kept };
}

/** Runs the task's tests as its validation asks and reads the verdict. */
async function validate(
  deps: ValidateDeps,
  request: ValidateRequest,
  digest: string,
): Promise<TaskValidation> {
  const { task, signal } = request;
  const started = performance.now();
  const slot = deps.slot ?? ((work) => work());
  const twice = (patch: string) =>
    Promise.all([0, 1].map(() => slot(() => runTaskTests(deps, task, patch, signal))));
  let gold: { patch: string; source: GoldSource } | { error: string } | null;
  let baseRuns: TestsRun[];
  if (request.gold !== null && "make" in request.gold) {
    // The solution runs beside the base runs: its patch is needed only after.
    const [made, base] = await Promise.all([slot(request.gold.make), twice("")]);
    gold = "error" in made ? made : { patch: made.patch, source: "solution" };
    baseRuns = base;
  } else {
    gold = request.gold;
    baseRuns = await twice("");
  }
  const goldRuns = gold !== null && "patch" in gold ? await twice(gold.patch) : null;
  const problems = [
    ...(gold !== null && "error" in gold ? [gold.error] : []),
    ...baseProblems(task, baseRuns, goldRuns),
    ...(goldRuns ? goldProblems(goldRuns) : []),
  ];
  const flaky = [...new Set([...changed(baseRuns), ...(goldRuns ? changed(goldRuns) : [])])];
  const unique = [...new Set(problems)];
  const verdict = fitted({
    valid: unique.length === 0 && flaky.length === 0,
    problems: named(unique).map((problem) => problem.slice(0, PROBLEM_CHARS)),
    flaky: flaky.slice(0, MAX_NAMED),
    flaky_count: flaky.length,
    base: baseRuns.map(kept),
    gold: goldRuns?.map(kept) ?? null,
    gold_source: gold !== null && "source" in gold ? gold.source : null,
    digest,
    backend: deps.backend.name,
    at: Date.now(),
    duration_ms: Math.round(performance.now() - started),
  });
  await keepBaseRun(deps, task, baseRuns[0], goldRuns);
  return verdict;
}

/**
 * What is wrong at the base commit. Tests that do not run there are the task unsolved when they
 * run with its gold patch (a test file importing what the fix adds), else a broken task.
 */
function baseProblems(task: Task, runs: TestsRun[], gold: TestsRun[] | null): string[] {
  const problems: string[] = [];
  const goldRuns = gold !== null && gold.every(ranAndPassed);
  for (const { evidence, missing } of runs) {
    const { reason, detail } = evidence;
    if (reason === "timeout") {
      problems.push(`at the base commit the tests ran past the time limit (${detail})`);
    } else if (TASK_FAULTS.has(reason)) {
      problems.push(`at the base commit: ${reason}: ${detail}`);
    } else if (missing !== null && !goldRuns) {
      problems.push(
        `at the base commit no test ran (${missing.reason}): ${missing.detail}` +
          (gold === null ? "" : "; with the gold patch they do not all pass either"),
      );
    } else if (missing === null && gradingMode(task) === "test_lists") {
      const passed = new Set(evidence.tests.passed);
      const f2p = (task.fail_to_pass ?? []).filter((test) => passed.has(test));
      const p2p = task.pass_to_pass.filter((test) => !passed.has(test));
      if (f2p.length > 0) {
        problems.push(`fail_to_pass tests pass at the base commit: ${few(f2p)}`);
      }
      if (p2p.length > 0) {
        problems.push(`pass_to_pass tests fail at the base commit: ${few(p2p)}`);
      }
    } else if (missing === null && reason === "passed") {
      problems.push(
        "the tests pass at the base commit, with no change: every rollout would be rewarded",
      );
    }
  }
  return problems;
}

/** What is wrong with the gold patch's runs: it must apply, and everything must pass. */
function goldProblems(runs: TestsRun[]): string[] {
  return runs.flatMap(({ evidence, missing }): string[] => {
    const { reason, detail } = evidence;
    if (reason === "patch_failed" || reason === "patch_rejected") {
      return [`the gold patch does not apply: ${detail}`];
    }
    if (missing !== null) {
      return [`with the gold patch no test ran (${missing.reason}): ${missing.detail}`];
    }
    if (reason === "passed") return [];
    if (reason === "tests_failed" && evidence.tests.failed.length > 0) {
      return [`with the gold patch tests fail: ${few(evidence.tests.failed)}`];
    }
    return [`with the gold patch the tests do not pass (${reason})${detail ? `: ${detail}` : ""}`];
  });
}

/** Whether a run passed with evidence that its tests ran. */
function ranAndPassed(run: TestsRun): boolean {
  return run.missing === null && run.evidence.reason === "passed";
}

/**
 * Tests whose outcome differs between two runs of the same tree (one that is named in only one
 * run changed too), and the whole run's when its tests have no names.
 */
function changed(runs: TestsRun[]): string[] {
  const [a, b] = runs.map(({ evidence }) => outcomes(evidence.tests));
  const ids = new Set([...a.keys(), ...b.keys()]);
  const tests = [...ids].filter((id) => a.get(id) !== b.get(id));
  const [first, second] = runs.map(({ evidence }) => evidence.reason);
  const whole = tests.length === 0 && first !== second &&
    [first, second].every((reason) => reason === "passed" || reason === "tests_failed");
  return whole ? ["(the test command: it passed once and failed once)"] : tests;
}

/** Each test id and how it fared (a test both passing and failing failed). */
function outcomes(tests: { passed: string[]; failed: string[] }): Map<string, string> {
  const map = new Map<string, string>();
  for (const id of tests.passed) map.set(id, "passed");
  for (const id of tests.failed) map.set(id, "failed");
  return map;
}

/** A run as the verdict keeps it, bounded. */
function kept({ evidence, missing }: TestsRun): ValidationRun {
  return {
    reason: evidence.reason,
    detail: evidence.detail?.slice(0, PROBLEM_CHARS) ?? null,
    missing,
    exit_code: evidence.exit_code,
    tests: {
      passed: evidence.tests.passed.slice(0, MAX_VALIDATION_IDS),
      failed: evidence.tests.failed.slice(0, MAX_VALIDATION_IDS),
    },
    counts: { passed: evidence.tests.passed.length, failed: evidence.tests.failed.length },
    log_tail: evidence.log_tail.slice(-VALIDATION_LOG_CHARS),
  };
}

/**
 * Keeps the base commit's run as the control of later evaluations without evidence
 * (`evaluate.ts`'s blame), marked when the tests run with the gold patch: then their not running
 * at the base commit is the task unsolved, and a patch that leaves them so earns its zero.
 */
async function keepBaseRun(
  deps: ValidateDeps,
  task: Task,
  run: TestsRun,
  gold: TestsRun[] | null,
): Promise<void> {
  if (!deps.baseRuns) return;
  const { reason, detail } = run.evidence;
  if (reason === "timeout") return; // says nothing of whether the tests run
  const proven = gold !== null && gold.every(ranAndPassed);
  const fault = TASK_FAULTS.has(reason)
    ? { reason, detail: detail ?? reason }
    : proven
    ? null
    : run.missing;
  await deps.baseRuns.keep(task, deps.backend.name, {
    missing: fault,
    reason,
    at: Date.now(),
    ...(proven ? { gold: true } : {}),
  });
}

/**
 * `verdict` within {@linkcode MAX_VERDICT_BYTES} of JSON: test ids and words come from the task's
 * own output, and a kept verdict is one store value. The runs' test ids and logs go first, then
 * the words are cut shorter.
 */
function fitted(verdict: TaskValidation): TaskValidation {
  if (jsonBytes(verdict) <= MAX_VERDICT_BYTES) return verdict;
  const lean = (run: ValidationRun): ValidationRun => ({
    ...run,
    detail: run.detail?.slice(0, 200) ?? null,
    missing: run.missing && { ...run.missing, detail: run.missing.detail.slice(0, 200) },
    tests: { passed: [], failed: [] },
    log_tail: run.log_tail.slice(-200),
  });
  const slim = {
    ...verdict,
    problems: verdict.problems.map((problem) => problem.slice(0, 150)),
    flaky: verdict.flaky.map((id) => id.slice(0, 100)),
    base: verdict.base.map(lean),
    gold: verdict.gold?.map(lean) ?? null,
  };
  if (jsonBytes(slim) <= MAX_VERDICT_BYTES) return slim;
  return { ...slim, problems: slim.problems.slice(0, 3), flaky: slim.flaky.slice(0, 3) };
}

/** The first {@linkcode MAX_NAMED} of `items`, the rest counted in a last one. */
function named(items: string[]): string[] {
  return items.length <= MAX_NAMED
    ? items
    : [...items.slice(0, MAX_NAMED - 1), `and ${items.length - MAX_NAMED + 1} more`];
}

/** Up to five test ids, and how many more. */
function few(ids: string[]): string {
  return ids.slice(0, 5).join(", ") + (ids.length > 5 ? ` and ${ids.length - 5} more` : "");
}
