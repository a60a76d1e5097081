/**
 * Whose failure a job's end was: one table, case by case, and docs/rollouts.md says it as the
 * code does.
 */
import assert from "node:assert/strict";
import { judgeEnd, OUTCOME_TABLE, retryDelayMs } from "../../lib/rollout/mod.ts";

Deno.test("each reason an attempt ends with is the agent's or the infrastructure's, retried or not", () => {
  const cases: [string, "agent" | "infra", boolean][] = [
    ["done", "agent", false],
    ["agent_timeout", "agent", false],
    ["sandbox_unavailable", "infra", true],
    ["setup_failed", "infra", true],
    ["agent_crashed", "infra", true],
    ["engine_unavailable", "infra", true],
    ["judger_failed", "infra", true],
    ["env_failed", "infra", true],
    ["model_failed", "infra", true],
    ["worker_lost", "infra", true],
    ["shutdown", "infra", true],
    ["internal_error", "infra", true],
    ["store_unavailable", "infra", true],
    ["runner_failed", "infra", false],
    ["no_tests_ran", "infra", false],
    ["pre_command_failed", "infra", false],
    ["test_patch_failed", "infra", false],
    ["repo_unavailable", "infra", false],
    ["agent_unavailable", "infra", false],
    ["wall_clock_timeout", "infra", false],
    ["cancelled", "infra", false],
    // A failure nobody listed yet is never taken for the agent's.
    ["something_new", "infra", true],
  ];
  for (const [reason, outcome, retry] of cases) {
    const judged = judgeEnd(reason);
    assert.deepEqual([judged.outcome, judged.retry], [outcome, retry], reason);
  }
  assert.deepEqual([...OUTCOME_TABLE.keys()], cases.slice(0, -1).map(([reason]) => reason));
});

Deno.test("the outcome table in docs/rollouts.md is OUTCOME_TABLE", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/rollouts.md", import.meta.url));
  const start = doc.indexOf("| reason ");
  assert.ok(start >= 0, "docs/rollouts.md has the outcome table");
  const rows = doc.slice(start).split("\n\n")[0].split("\n").slice(2).map((line) =>
    line.split("|").slice(1, -1).map((cell) => cell.trim())
  );
  assert.deepEqual(
    rows,
    [...OUTCOME_TABLE].map(([reason, rule]) => [
      `\`${reason}\``,
      rule.outcome,
      rule.retry ? "yes" : "no",
      rule.meaning,
    ]),
  );
});

Deno.test("retries wait exponentially from the base, capped at a minute, with jitter in [½, 1½)", () => {
  assert.deepEqual(
    [1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, 100, 0.5)),
    [100, 200, 400, 800],
  );
  assert.equal(retryDelayMs(1, 100, 0), 50);
  assert.equal(retryDelayMs(1, 100, 0.999), 150);
  assert.equal(retryDelayMs(30, 1000, 0.5), 60_000);
});
