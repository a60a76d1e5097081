/**
 * Which tests passed and which failed, read from a test runner's own output: `unittest -v`,
 * `pytest -rA`, and `node --test` (TAP, the default when stdout is not a terminal on Node 20,
 * and the spec reporter of later versions). Names are the ids a task's test lists use.
 *
 * @module
 */

/** Tests by outcome; a name appears in one list only (a failure wins over a pass). */
export interface TestReport {
  readonly passed: string[];
  readonly failed: string[];
}

/**
 * Every test outcome found in `output`, whichever runner printed it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseTestOutput } from "./test_report.ts";
 * const output = "test_add (tests.test_calc.TestCalc.test_add) ... ok\nFAILED t.py::test_b - x";
 * assert.deepEqual(parseTestOutput(output), {
 *   passed: ["tests.test_calc.TestCalc.test_add"],
 *   failed: ["t.py::test_b"],
 * });
 * ```
 */
export function parseTestOutput(output: string): TestReport {
  const outcomes = new Map<string, boolean>();
  const record = (name: string, passed: boolean) => {
    // A test reported twice (a retry, a summary line) counts as failed if it ever failed.
    if (outcomes.get(name) !== false) outcomes.set(name, passed);
  };
  const lines = output.replaceAll("\r\n", "\n").split("\n");
  unittest(lines, record);
  pytest(lines, record);
  tap(lines, record);
  spec(lines, record);
  const passed: string[] = [];
  const failed: string[] = [];
  for (const [name, ok] of outcomes) (ok ? passed : failed).push(name);
  return { passed, failed };
}

type Record = (name: string, passed: boolean) => void;

/** `test_x (pkg.mod.Class.test_x) ... ok` (3.11+) or `test_x (pkg.mod.Class) ... FAIL`; a
 * docstring may put the outcome on the next line. Also `FAIL: test_x (pkg.mod.Class.test_x)`. */
function unittest(lines: string[], record: Record): void {
  const head = /^(\w+) \(([\w.]+)\)(.*)$/;
  const outcome = /\.\.\. (ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)$/;
  const id = (method: string, where: string) =>
    where.endsWith(`.${method}`) ? where : `${where}.${method}`;
  for (let i = 0; i < lines.length; i++) {
    const match = lines[i].match(head);
    if (!match) continue;
    const [, method, where, rest] = match;
    const result = rest.match(outcome) ?? lines[i + 1]?.match(outcome);
    if (!result) continue;
    const word = result[1];
    if (word === "ok" || word === "expected failure") record(id(method, where), true);
    else if (word === "FAIL" || word === "ERROR" || word === "unexpected success") {
      record(id(method, where), false);
    }
  }
  for (const line of lines) {
    const failure = line.match(/^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)/);
    if (failure) record(id(failure[1], failure[2]), false);
  }
}

/** pytest's short summary (`-rA`): `PASSED path::name`, `FAILED path::name - reason`, `ERROR …`. */
function pytest(lines: string[], record: Record): void {
  for (const line of lines) {
    const match = line.match(/^(PASSED|XFAIL|FAILED|ERROR|XPASS) (\S+::\S+|\S+\.py)(?: - .*)?$/);
    if (!match) continue;
    record(match[2], match[1] === "PASSED" || match[1] === "XFAIL");
  }
}

/** TAP from `node --test`: `ok 1 - name`, `not ok 2 - name`, nested by four spaces; a suite (a
 * result line with results nested under it) is not a test, its leaves are, named `suite > leaf`. */
function tap(lines: string[], record: Record): void {
  const result = /^( *)(not ok|ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$/;
  const subtest = /^( *)# Subtest: (.*)$/;
  const path: string[] = [];
  /** Per depth: whether a result line appeared deeper since that depth's subtest began. */
  const hasChildren: boolean[] = [];
  for (const line of lines) {
    const sub = line.match(subtest);
    if (sub) {
      const depth = sub[1].length / 4;
      path.length = depth;
      path[depth] = sub[2];
      hasChildren[depth] = false;
      continue;
    }
    const res = line.match(result);
    if (!res) continue;
    const depth = res[1].length / 4;
    if (!Number.isInteger(depth)) continue;
    for (let d = 0; d < depth; d++) hasChildren[d] = true;
    const isSuite = hasChildren[depth] === true;
    hasChildren[depth] = false;
    if (isSuite || res[4] === "SKIP" || res[4] === "TODO") continue;
    const name = [...path.slice(0, depth), res[3]].join(" > ");
    record(name, res[2] === "ok");
  }
}

/** Node's spec reporter: `✔ name (1.2ms)`, `✖ name (1.2ms)`, suites as `▶ suite`, nested by two
 * spaces. The summary after `✖ failing tests:` repeats failures and is skipped. */
function spec(lines: string[], record: Record): void {
  const suites: string[] = [];
  for (const line of lines) {
    if (/^✖ failing tests:/.test(line)) break;
    const suite = line.match(/^( *)▶ (.*)$/);
    if (suite) {
      const depth = suite[1].length / 2;
      suites.length = depth;
      suites[depth] = suite[2];
      continue;
    }
    const test = line.match(/^( *)([✔✖]) (.*?) \([\d.]+m?s\)(?: # (SKIP|TODO)\b.*)?$/);
    if (!test || test[4]) continue;
    const depth = test[1].length / 2;
    if (!Number.isInteger(depth)) continue;
    // A suite's own closing line (`✔ suite (2ms)` after its `▶ suite`) is not a test.
    if (suites[depth] === test[3]) {
      suites.length = depth;
      continue;
    }
    record([...suites.slice(0, depth), test[3]].join(" > "), test[2] === "✔");
  }
}
