/**
 * Whether an evaluation shows that the task's tests ran. A zero is a reward only when they did: a
 * runner that is not installed, a test path that names nothing, a module the tests cannot import,
 * a verifier that wrote nothing — each gives a run that failed without a test having run, and that
 * is nobody's score. What counts as evidence per grading mode is the table `EVIDENCE_RULES`
 * (docs/evaluation.md prints it): an evaluation that fails one of these rules is asked again at
 * the base commit (`task_verdicts.ts`), and blamed on the task when it fails there too.
 *
 * @module
 */
import type { GradingMode, Task } from "./task.ts";
import type { TestReport } from "./test_report.ts";

/** Why an evaluation holds no evidence that the tests ran. */
export type MissingReason = "runner_failed" | "no_tests_ran";

/** What is missing, and the line of the log that says so. */
export interface MissingEvidence {
  readonly reason: MissingReason;
  readonly detail: string;
}

/** What a run of the tests left to judge by. */
export interface TestRun {
  readonly mode: GradingMode;
  readonly task: Task;
  /** The test command's exit status; `null` when it was killed. */
  readonly exitCode: number | null;
  /** Its output, stdout and stderr interleaved. */
  readonly output: string;
  /** The tests its output names. */
  readonly report: TestReport;
  /** A Harbor verifier's missing reward, in words; `null` when it wrote one (or is no verifier). */
  readonly rewardError: string | null;
  /** Whether the run passed (its command's exit status, the listed tests, the reward). */
  readonly passed: boolean;
}

/** One rule: when a run breaks it, and what it then lacks. */
interface Rule {
  readonly reason: MissingReason;
  /** The grading modes it applies to. */
  readonly modes: readonly GradingMode[] | "all";
  /** What breaks it, in words (the table in the docs). */
  readonly meaning: string;
  /**
   * Whether a run that passed is held to it too: a pass with no test run is no pass (a Harbor
   * verifier's reward is its own, and never held to one).
   */
  readonly onPass: boolean;
  /** The problem with `run`, or `null`. */
  readonly check: (run: TestRun) => string | null;
}

const ALL: Rule["modes"] = "all";

/** The first line of `output` matching `pattern`, trimmed to 300 characters. */
function lineOf(output: string, pattern: RegExp): string | null {
  const match = output.match(pattern);
  return match === null ? null : match[0].trim().slice(0, 300);
}

/** Whether `report` names no test at all. */
function silent(report: TestReport): boolean {
  return report.passed.length + report.failed.length === 0;
}

/** Whether the task's test command is a default one whose output names its tests. */
function namesTests(run: TestRun): boolean {
  return run.mode === "f2p_script" && run.task.f2p_cmd === undefined &&
    /\.(?:py|js|mjs|cjs)$/.test(run.task.f2p_filename);
}

/**
 * The rules, in the order they are tried. Each is a fact of the runner's own output: POSIX
 * shells exit 126 and 127 for a command that cannot run or is not found, and name the command
 * they did not find; CPython prints `python3: No module named X` when `-m X` is not installed;
 * pytest prints `ERROR collecting` and `no tests ran`, and `ERROR: not found` for a path that
 * names nothing; unittest prints `Ran 0 tests`, and an `ERROR` of `_FailedTest` for a test it
 * could not load; node's runner prints `Could not find '…'` for a path that is not there, and
 * `# tests 0` (TAP) or `ℹ tests 0` (spec).
 */
export const EVIDENCE_RULES: readonly Rule[] = [
  {
    reason: "runner_failed",
    modes: ALL,
    meaning: "the test command exited 126 (not executable) or 127 (not found)",
    onPass: false,
    check: ({ exitCode, output }) =>
      exitCode === 126 || exitCode === 127
        ? `the test command exited ${exitCode}${
          exitCode === 126 ? " (not executable)" : " (not found)"
        }: ${lineOf(output, /^.*not found.*$|^.*Permission denied.*$/m) ?? "no output"}`
        : null,
  },
  {
    reason: "runner_failed",
    modes: ALL,
    meaning: "Python could not find the module it was told to run (`python3: No module named " +
      "…`, from `python3 -m`), and no test outcome was printed",
    onPass: false,
    check: ({ output, report }) => {
      const line = silent(report)
        ? lineOf(output, /^(?:\S*\/)?python[\d.]*: No module named [\w.]+\s*$/m)
        : null;
      return line === null ? null : `the test runner is not installed: ${line}`;
    },
  },
  {
    reason: "runner_failed",
    modes: ["eval_cmd", "f2p_script", "test_lists"],
    meaning: "the shell running the test command said a command of it was not found " +
      "(`bash: line 1: …: command not found`), and no test outcome was printed",
    onPass: false,
    check: ({ output, report }) => {
      const line = silent(report)
        ? lineOf(
          output,
          /^(?:\S*\/)?(?:ba)?sh: (?:line )?\d+: [^\s:]+: (?:command )?not found\s*$/m,
        )
        : null;
      return line === null ? null : `a command the tests need is missing: ${line}`;
    },
  },
  {
    reason: "runner_failed",
    modes: ["harbor"],
    meaning: "bash said a command of the verifier's own script was not found " +
      "(`/tests/test.sh: line 3: uv: command not found`)",
    onPass: false,
    check: ({ output }) => {
      const line = lineOf(output, /^\/tests\/test\.sh: line \d+: [^\s:]+: command not found\s*$/m);
      return line === null ? null : `a command the verifier needs is missing: ${line}`;
    },
  },
  {
    reason: "no_tests_ran",
    modes: ALL,
    meaning: "the tests could not be collected or loaded (pytest's `ERROR collecting`, " +
      "`ImportError while loading conftest`; " +
      "unittest's `_FailedTest`: a module it could not import, a name it could not find)",
    onPass: true,
    check: ({ output }) => {
      const line = lineOf(
        output,
        /^_* ?ERROR collecting \S+|^ImportError while loading conftest .*$|^ERROR: \w+ \(unittest\.loader\._FailedTest\b.*$/m,
      );
      return line === null ? null : `the tests could not be collected: ${line}`;
    },
  },
  {
    reason: "no_tests_ran",
    modes: ALL,
    meaning: "the runner found no test where it was told to look (pytest's `ERROR: file or " +
      "directory not found`, `ERROR: not found`; node's `Could not find '…'`)",
    onPass: true,
    check: ({ output }) => {
      const line = lineOf(
        output,
        /^ERROR: (?:file or directory not found|not found): .*$|^Could not find '.*'$/m,
      );
      return line === null ? null : `the runner found no such test: ${line}`;
    },
  },
  {
    reason: "no_tests_ran",
    modes: ALL,
    meaning: "the runner ran no test (`no tests ran`, `Ran 0 tests`, `# tests 0`, `ℹ tests 0`)",
    onPass: true,
    check: ({ output }) => {
      const line = lineOf(
        output,
        /^=+ no tests ran\b.*$|^Ran 0 tests in .*$|^# tests 0\s*$|^ℹ tests 0\s*$/m,
      );
      return line === null ? null : `the runner ran no test: ${line}`;
    },
  },
  {
    reason: "no_tests_ran",
    modes: ["test_lists"],
    meaning: "a test of `fail_to_pass` or `pass_to_pass` is not in the runner's output",
    onPass: true,
    check: ({ task, report }) => {
      const seen = new Set([...report.passed, ...report.failed]);
      const listed = [...new Set([...task.fail_to_pass ?? [], ...task.pass_to_pass])];
      const missing = listed.filter((test) => !seen.has(test));
      if (missing.length === 0) return null;
      const named = missing.slice(0, 5).join(", ") + (missing.length > 5 ? ", …" : "");
      return missing.length === listed.length
        ? `none of the ${listed.length} listed tests ran (${named})`
        : `${missing.length} of the ${listed.length} listed tests never ran: ${named}`;
    },
  },
  {
    reason: "no_tests_ran",
    modes: ["f2p_script"],
    meaning: "a `.py` or `.js` test script run by its default command (pytest, node --test) " +
      "reported no test",
    onPass: true,
    check: (run) =>
      namesTests(run) && silent(run.report) ? "the test script reported no test" : null,
  },
  {
    reason: "no_tests_ran",
    modes: ["harbor"],
    meaning: "the verifier (`tests/test.sh`) wrote no reward file, or one that does not parse",
    onPass: false,
    check: ({ rewardError }) =>
      rewardError === null ? null : `the verifier wrote no reward: ${rewardError}`,
  },
];

/**
 * What `run` lacks to count as the tests having run, or `null` when nothing is missing. A run
 * that passed is held only to the rules that say no test ran (a Harbor verifier's reward never).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { missingEvidence } from "./test_evidence.ts";
 * import { TaskSchema } from "./task.ts";
 * const task = TaskSchema.parse({ repo: "/r", base_commit: "HEAD", eval_cmd: "python3 -m pytest" });
 * const run = {
 *   mode: "eval_cmd" as const,
 *   task,
 *   exitCode: 1,
 *   output: "/usr/bin/python3: No module named pytest\n",
 *   report: { passed: [], failed: [] },
 *   rewardError: null,
 *   passed: false,
 * };
 * assert.deepEqual(missingEvidence(run), {
 *   reason: "runner_failed",
 *   detail: "the test runner is not installed: /usr/bin/python3: No module named pytest",
 * });
 * ```
 */
export function missingEvidence(run: TestRun): MissingEvidence | null {
  if (run.passed && run.mode === "harbor") return null;
  for (const rule of EVIDENCE_RULES) {
    if (rule.modes !== ALL && !rule.modes.includes(run.mode)) continue;
    if (run.passed && !rule.onPass) continue;
    const detail = rule.check(run);
    if (detail !== null) return { reason: rule.reason, detail };
  }
  return null;
}
