import assert from "node:assert/strict";
import { parseTestOutput } from "../../lib/evaluate/mod.ts";

Deno.test("parseTestOutput() reads unittest -v lines, old and new id forms, docstrings and the failure headers", () => {
  const output = [
    "test_add (tests.test_calc.TestCalc.test_add) ... ok",
    "test_doc (tests.test_calc.TestCalc.test_doc)",
    "Docstring first line. ... ok",
    "test_err (tests.test_calc.TestCalc) ... ERROR",
    "test_skip (tests.test_calc.TestCalc.test_skip) ... skipped 'no'",
    "test_sub (tests.test_calc.TestCalc.test_sub) ... FAIL",
    "test_xf (tests.test_calc.TestCalc.test_xf) ... expected failure",
    "",
    "======================================================================",
    "FAIL: test_sub (tests.test_calc.TestCalc.test_sub)",
    "----------------------------------------------------------------------",
    "FAIL: test_quiet (tests.test_other.TestOther.test_quiet)",
  ].join("\n");
  assert.deepEqual(parseTestOutput(output), {
    passed: [
      "tests.test_calc.TestCalc.test_add",
      "tests.test_calc.TestCalc.test_doc",
      "tests.test_calc.TestCalc.test_xf",
    ],
    failed: [
      "tests.test_calc.TestCalc.test_err",
      "tests.test_calc.TestCalc.test_sub",
      "tests.test_other.TestOther.test_quiet",
    ],
  });
});

Deno.test("parseTestOutput() reads pytest's -rA summary and leaves skips out", () => {
  const output = [
    "=========================== short test summary info ============================",
    "PASSED tests/test_u.py::TestCalc::test_add",
    "PASSED tests/test_u.py::test_param[1-2]",
    "SKIPPED [1] tests/test_u.py:6: no",
    "XFAIL tests/test_u.py::test_known - reason",
    "FAILED tests/test_u.py::TestCalc::test_sub - AssertionError: 0 != 1",
    "ERROR tests/test_u.py::test_fixture",
    "==================== 2 failed, 2 passed, 1 skipped in 0.01s ====================",
  ].join("\n");
  assert.deepEqual(parseTestOutput(output), {
    passed: [
      "tests/test_u.py::TestCalc::test_add",
      "tests/test_u.py::test_param[1-2]",
      "tests/test_u.py::test_known",
    ],
    failed: ["tests/test_u.py::TestCalc::test_sub", "tests/test_u.py::test_fixture"],
  });
});

Deno.test("parseTestOutput() reads node --test TAP: leaves named under their suites, suites and skips left out", () => {
  const output = [
    "TAP version 13",
    "# Subtest: adds",
    "ok 1 - adds",
    "  ---",
    "  duration_ms: 0.96",
    "  ...",
    "# Subtest: subs",
    "not ok 2 - subs",
    "  ---",
    "  error: '0 == 1'",
    "  ...",
    "# Subtest: suite",
    "    # Subtest: inner ok",
    "    ok 1 - inner ok",
    "    # Subtest: inner bad",
    "    not ok 2 - inner bad",
    "    1..2",
    "not ok 3 - suite",
    "# Subtest: later",
    "ok 4 - later # SKIP not today",
    "1..4",
  ].join("\n");
  assert.deepEqual(parseTestOutput(output), {
    passed: ["adds", "suite > inner ok"],
    failed: ["subs", "suite > inner bad"],
  });
});

Deno.test("parseTestOutput() reads node's spec reporter and skips its repeated failure list", () => {
  const output = [
    "✔ adds (0.89831ms)",
    "✖ subs (0.766553ms)",
    "  AssertionError [ERR_ASSERTION]: 0 == 1",
    "",
    "▶ suite",
    "  ✔ inner ok (0.191957ms)",
    "  ✖ inner bad (0.091857ms)",
    "",
    "✖ suite (0.501068ms)",
    "ℹ tests 4",
    "✖ failing tests:",
    "",
    "✖ subs (0.766553ms)",
    "✖ ghost (1ms)",
  ].join("\n");
  assert.deepEqual(parseTestOutput(output), {
    passed: ["adds", "suite > inner ok"],
    failed: ["subs", "suite > inner bad"],
  });
});

Deno.test("parseTestOutput() counts a test reported both passing and failing as failed", () => {
  const output = "ok 1 - flaky\nnot ok 2 - flaky\nok 3 - flaky\n";
  assert.deepEqual(parseTestOutput(output), { passed: [], failed: ["flaky"] });
});

Deno.test("parseTestOutput() finds nothing in output that names no tests", () => {
  assert.deepEqual(parseTestOutput("Traceback (most recent call last):\nok computer\n"), {
    passed: [],
    failed: [],
  });
});
