/**
 * No reward without evidence, through `/rollout` with the real Claude Code CLI: the newcomer's
 * first rollout on a machine without the task's test runner ends as the infrastructure's, with no
 * reward and the reason named (never `tests_failed`); an agent whose patch breaks the tests still
 * gets its zero.
 */
import assert from "node:assert/strict";
import { ADMIN_HEADERS, startGateway } from "../_gateway.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import { awaitJob, oneCommand, submit } from "./_rollout.ts";

Deno.test("the newcomer's rollout on a machine without the task's runner: infra, runner_failed, no reward, never tests_failed", async () => {
  const gw = await startGateway({
    script: oneCommand("echo '# a change' >> textutil.py", "Done."),
    worker: true,
  });
  try {
    const { task } = await fixtureTask("python_pytest");
    // The runner the task names is not installed here, as pytest was not on a fresh machine.
    const missing = { ...task, f2p_cmd: "python3 -m pytest_not_installed -rA {script}" };
    const { group_id, jobs } = await submit(gw, { task: missing, n: 2 });
    for (const { id } of jobs) {
      const view = await awaitJob(gw, id);
      assert.deepEqual(
        [view.phase, view.outcome, view.reason],
        ["failed", "infra", "runner_failed"],
        JSON.stringify(view),
      );
      assert.match(
        view.detail,
        /^the test runner is not installed: .*No module named pytest_not_installed/,
      );
      // Not retried: a task's fault repeats.
      assert.equal(view.attempt, 1);
      // The evaluation is kept with its log, and its score is none.
      assert.deepEqual([view.result.reward.score, view.result.reward.reason], [
        null,
        "runner_failed",
      ]);
      assert.match(view.result.reward.log_tail, /No module named pytest_not_installed/);
      assert.equal(view.result.samples, null);
      const session = await (await fetch(`${gw.url}/sessions/${view.session_id}`, {
        headers: ADMIN_HEADERS,
      })).json();
      assert.deepEqual([session.closed_as, session.reward], ["aborted", null]);
    }
    const group = await (await fetch(`${gw.url}/rollout?group_id=${group_id}`, {
      headers: ADMIN_HEADERS,
    })).json();
    assert.deepEqual([group.complete, group.agent_jobs, group.infra_jobs.length], [false, 0, 2]);
  } finally {
    await gw.close();
  }
});

Deno.test("an agent whose patch is a syntax error gets its zero: the tests run at the base commit", async () => {
  const gw = await startGateway({
    script: oneCommand("echo 'def broken(:' >> textutil.py", "Done."),
    worker: true,
  });
  try {
    const { task } = await fixtureTask("python_pytest");
    const view = await awaitJob(gw, (await submit(gw, { task })).jobs[0].id);
    assert.deepEqual(
      [view.phase, view.outcome, view.result.reward.score, view.result.reward.reason],
      ["done", "agent", 0, "tests_failed"],
      JSON.stringify(view),
    );
    assert.deepEqual(view.result.reward.base_run, { reason: "tests_failed", detail: null });
    assert.match(view.result.reward.detail, /the patch stopped them$/);
    assert.equal(view.result.samples.samples[0].reward, 0);
  } finally {
    await gw.close();
  }
});
