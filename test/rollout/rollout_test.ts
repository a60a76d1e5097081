/**
 * Whole episodes end to end on one machine: the real Claude Code CLI in a local bubblewrap
 * sandbox, the scripted engine as the model, the gateway recording, the patch graded.
 */
import assert from "node:assert/strict";
import { type FakeE2b, startFakeE2b } from "../../fixtures/fake_e2b.ts";
import type { Script } from "../../lib/scripted_engine/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { claudeTarball, pinnedTarball } from "../_claude.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import { listDir, processesWith, waitFor } from "../_host.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import {
  awaitJob,
  FIX_CALC,
  HALF_FIX_CALC,
  job,
  type JobJson,
  miniSweAgent,
  oneCommand,
  qwenShell,
  submit,
  toolCall,
} from "./_rollout.ts";

Deno.test("a rollout solves a fixture task with the real Claude Code CLI: reward 1, exact samples, the patch", async () => {
  const gw = await startGateway({
    script: oneCommand(FIX_CALC, "Done: true division."),
    worker: true,
  });
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, n: 1 });
    assert.equal(submitted.jobs.length, 1);
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.equal(view.result.reward.score, 1, view.result.reward.log_tail);
    assert.equal(view.result.patch, gold, "the agent's sed made exactly the gold patch");
    assert.equal(view.result.agent.exit_code, 0);
    assert.equal(view.result.agent.result, "success");
    // Kept as long as its session: deleted together by the sweeper.
    assert.equal(
      Date.parse(view.expires_at) - Date.parse(view.finished_at),
      gw.deps.config.sessionRetentionMs,
    );
    assert.equal(view.progress.turns, 2);
    // The samples are the session's, token-exact against what the engine saw and sampled.
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assert.equal(calls.length, 2);
    assertChainExact(calls, view.result.samples.samples);
    assert.equal(view.result.samples.samples[0].reward, 1);
    assert.deepEqual(await listDir(`${gw.deps.config.sandboxRoot}/sandboxes`), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a rollout solves a fixture task with the real Qwen Code CLI over Chat Completions: reward 1, exact samples", async () => {
  const gw = await startGateway({
    script: oneCommand(FIX_CALC, "Done: true division.", undefined, qwenShell),
    worker: true,
  });
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, {
      task,
      agent: { harness: "qwen_code" },
      record_messages: true,
    });
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.equal(view.result.reward.score, 1, view.result.reward.log_tail);
    assert.equal(view.result.patch, gold, "the agent's sed made exactly the gold patch");
    assert.deepEqual(
      [view.result.agent.exit_code, view.result.agent.result, view.result.agent.num_turns],
      [0, "success", 2],
    );
    // The task's conversation: two turns, each token-exact against what the engine saw.
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assert.equal(calls.length, 2);
    assertChainExact(calls, view.result.samples.samples);
    assert.equal(view.result.samples.samples[0].reward, 1);
    // Its session kept what each request added: the prompt first, then the command's output.
    const raw = await job(gw, submitted.jobs[0].id, "?format=raw");
    const [first, second] = raw.result.samples.chains[0].turns;
    assert.deepEqual(
      first.request.messages.map((message: { role: string }) => message.role),
      ["system", "user"],
    );
    assert.ok(first.request.messages[1].content.includes(task.problem_statement));
    assert.ok(
      first.request.tools.some((tool: { function: { name: string } }) =>
        tool.function.name === "run_shell_command"
      ),
    );
    assert.deepEqual(second.request.messages.map((message: { role: string }) => message.role), [
      "tool",
    ]);
    assert.deepEqual(await listDir(`${gw.deps.config.sandboxRoot}/sandboxes`), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a rollout solves a fixture task with the real Codex CLI over the Responses API: reward 1, exact samples", async () => {
  const gw = await startGateway({
    script: oneCommand(
      FIX_CALC,
      "Done: true division.",
      undefined,
      (cmd) => toolCall("exec_command", { cmd }),
    ),
    worker: true,
  });
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, agent: { harness: "codex" } });
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.equal(view.result.reward.score, 1, view.result.reward.log_tail);
    assert.equal(view.result.patch, gold, "the agent's sed made exactly the gold patch");
    assert.deepEqual(
      [view.result.agent.exit_code, view.result.agent.result],
      [0, "success"],
      view.result.agent.log_tail,
    );
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assert.equal(calls.length, 2);
    assertChainExact(calls, view.result.samples.samples);
    // The model read Codex's own system prompt, the CLI's first developer message.
    assert.match(
      gw.tokenizer.decode(calls[0].inputIds),
      /You are a coding agent running in the Codex CLI/,
    );
    assert.deepEqual(await listDir(`${gw.deps.config.sandboxRoot}/sandboxes`), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a rollout runs any command-line agent: a stdlib script over Chat Completions, the prompt as an argument", async () => {
  const gw = await startGateway({
    script: oneCommand(FIX_CALC, "Fixed.", undefined, (command) => toolCall("bash", { command })),
    worker: true,
  });
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, {
      task,
      agent: await miniSweAgent(),
    });
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.equal(view.result.reward.score, 1, view.result.agent.log_tail);
    assert.equal(view.result.patch, gold);
    assert.deepEqual(
      [view.result.agent.exit_code, view.result.agent.result, view.result.agent.num_turns],
      [0, null, null],
    );
    assert.match(view.result.agent.log_tail, /Fixed\./, "the script printed its last answer");
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assert.equal(calls.length, 2);
    assertChainExact(calls, view.result.samples.samples);
    // The prompt reached the model whole, as the argument it was given.
    assert.ok(gw.tokenizer.decode(calls[0].inputIds).includes(task.problem_statement));
  } finally {
    await gw.close();
  }
});

Deno.test("a rollout whose agent makes a wrong fix gets reward 0, the failing test named", async () => {
  const gw = await startGateway({ script: oneCommand(HALF_FIX_CALC), worker: true });
  try {
    const { task } = await fixtureTask("python_unittest");
    const view = await awaitJob(gw, (await submit(gw, { task })).jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.deepEqual(
      [view.result.reward.score, view.result.reward.tests.failed],
      [0, ["tests.test_calc.TestCalc.test_mean_fraction"]],
    );
    assert.equal(view.result.samples.samples[0].reward, 0);
  } finally {
    await gw.close();
  }
});

Deno.test("a rollout whose agent never finishes is aborted with agent_timeout, the agent's outcome, leaving nothing", async () => {
  const marker = `rg_forever_${crypto.randomUUID().slice(0, 8)}`;
  const gw = await startGateway({
    // Claude Code refuses a plain `sleep N`; a program that waits is not refused.
    script: oneCommand(
      `python3 -c 'import time; time.sleep(1000)' # ${marker}`,
      "unreachable",
      600_000,
    ),
    worker: true,
  });
  try {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, budgets: { agent_ms: 2000 } });
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.deepEqual(
      [view.phase, view.reason, view.detail],
      ["aborted", "agent_timeout", "The agent ran past its budget of 2000 ms"],
    );
    assert.equal(view.outcome, "agent");
    assert.equal(view.result.agent.timed_out, true);
    assert.equal(view.result.reward, null);
    assert.deepEqual(await processesWith(marker), [], "the agent and its command are gone");
    assert.deepEqual(await listDir(`${gw.deps.config.sandboxRoot}/sandboxes`), []);
    const session = await gw.session(view.session_id);
    assert.deepEqual([session.status, session.closed_as], ["closed", "aborted"]);
    assert.equal(gw.engine.inFlight(), 0);
  } finally {
    await gw.close();
  }
});

Deno.test("the wall-clock guard aborts a sample stuck anywhere, here in a pre-command", async () => {
  const marker = `rg_stuck_${crypto.randomUUID().slice(0, 8)}`;
  const gw = await startGateway({ script: oneCommand(FIX_CALC), worker: true });
  try {
    const { task } = await fixtureTask("python_unittest");
    const stuck = { ...task, pre_commands: [`sleep 1000 # ${marker}`], timeout_ms: 3_600_000 };
    const submitted = await submit(gw, {
      task: stuck,
      budgets: { agent_ms: 1000, eval_ms: 1000, margin_ms: 0 },
    });
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.deepEqual(
      [view.phase, view.reason, view.detail],
      ["aborted", "wall_clock_timeout", "The job ran past its wall-clock limit of 2000 ms"],
    );
    assert.equal(view.outcome, "infra");
    assert.deepEqual(await processesWith(marker), []);
    assert.deepEqual(await listDir(`${gw.deps.config.sandboxRoot}/sandboxes`), []);
  } finally {
    await gw.close();
  }
});

Deno.test("a group of four runs at once and every sample finishes with its reward", async () => {
  const gw = await startGateway({
    script: oneCommand(FIX_CALC),
    worker: true,
    env: { ROLLOUT_CONCURRENCY: "4", ROLLOUT_BOOT_CONCURRENCY: "4" },
  });
  try {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, { task, n: 4 });
    assert.equal(submitted.jobs.length, 4);
    const views = await Promise.all(submitted.jobs.map(({ id }) => awaitJob(gw, id)));
    assert.deepEqual(
      views.map((v) => [v.phase, v.result.reward.score]),
      Array(4).fill(["done", 1]),
    );
    assert.deepEqual(views.map((v) => v.group_id), Array(4).fill(submitted.group_id));
    assert.deepEqual(views.map((v) => v.index).sort(), [0, 1, 2, 3]);
    // They overlapped: every sample started before the first one finished.
    const firstEnd = Math.min(...views.map((v) => Date.parse(v.finished_at)));
    assert.ok(
      views.every((v) => Date.parse(v.started_at) < firstEnd),
      JSON.stringify(views.map((v) => [v.started_at, v.finished_at])),
    );
    // The group listing shows the same four.
    const group = await (await fetch(`${gw.url}/rollout?group_id=${submitted.group_id}`, {
      headers: ADMIN_HEADERS,
    })).json();
    assert.deepEqual(group.jobs.map((v: { id: string }) => v.id), submitted.jobs.map((j) => j.id));
  } finally {
    await gw.close();
  }
});

Deno.test("DELETE of a running job leaves no process, sandbox or open engine request", async () => {
  const marker = `rg_cancel_${crypto.randomUUID().slice(0, 8)}`;
  // The model takes long to answer: the agent waits on the gateway, which waits on the engine.
  const gw = await startGateway({
    script: [{ text: "Thinking for a long time.", latencyMs: 2000 }],
    worker: true,
  });
  try {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, {
      task,
      agent: { prompt_template: `{problem_statement}\n${marker}` },
    });
    const id = submitted.jobs[0].id;
    await awaitJob(gw, id, () => gw.engine.inFlight() > 0);
    assert.ok((await processesWith(marker)).length > 0, "the agent runs");
    const response = await fetch(`${gw.url}/rollout/${id}`, {
      method: "DELETE",
      headers: ADMIN_HEADERS,
    });
    const view = await response.json();
    assert.equal(response.status, 200, JSON.stringify(view));
    assert.deepEqual([view.phase, view.reason], ["aborted", "cancelled"]);
    assert.deepEqual(await processesWith(marker), [], "the agent is gone");
    assert.deepEqual(await listDir(`${gw.deps.config.sandboxRoot}/sandboxes`), []);
    assert.equal(gw.engine.inFlight(), 0, "the engine request was aborted");
    assert.equal(gw.engine.abortRequests.length, 1);
    const session = await gw.session(view.session_id);
    assert.deepEqual([session.status, session.closed_as], ["closed", "aborted"]);
    // Cancelling again changes nothing.
    const again = await fetch(`${gw.url}/rollout/${id}`, {
      method: "DELETE",
      headers: ADMIN_HEADERS,
    });
    assert.deepEqual([again.status, (await again.json()).reason], [200, "cancelled"]);
  } finally {
    await gw.close();
  }
});

/**
 * One sample of the python_unittest fixture task on the fake E2B backend: the agent installed
 * from the tarball `env` names, with an empty npm cache and an unreachable registry, as on a
 * fresh machine with no network. Asserts reward 1 on E2B, the gold patch, exact samples and no
 * sandbox left; `check` looks at the rest.
 */
async function e2bRollout(
  script: Script,
  env: Record<string, string>,
  agent: Record<string, unknown>,
  check: (view: JobJson, gw: TestGateway, fake: FakeE2b) => void,
): Promise<void> {
  const fake = await startFakeE2b();
  const gw = await startGateway({
    script,
    worker: true,
    env: { SANDBOX_BACKEND: "e2b", ...fake.env, E2B_BOOT_BACKOFF_MS: "1", ...env },
  });
  const emptyCache = await Deno.makeTempDir({ prefix: "rg-npm-cache-" });
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const npm = { npm_config_cache: emptyCache, npm_config_registry: "http://127.0.0.1:9/" };
    const body = { task, agent: { ...agent, env: npm } };
    const view = await awaitJob(gw, (await submit(gw, body)).jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.deepEqual([view.result.reward.score, view.result.reward.sandbox.backend], [1, "e2b"]);
    assert.equal(view.result.patch, gold);
    const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
    assertChainExact(calls, view.result.samples.samples);
    check(view, gw, fake);
    assert.deepEqual(fake.live(), []);
  } finally {
    await gw.close();
    await fake.close();
    await Deno.remove(emptyCache, { recursive: true });
  }
}

Deno.test("a rollout through E2B installs Claude Code offline from its tarball with npm and solves the task", async () => {
  await e2bRollout(
    oneCommand(FIX_CALC),
    { CLAUDE_CODE_TARBALL: await claudeTarball() },
    {},
    (_view, _gw, fake) => {
      // The agent's sandbox had network (for the gateway); the evaluation's had none.
      const creates = fake.creates as Record<string, Record<string, string>>[];
      assert.deepEqual(
        creates.map((body) => [body.metadata.purpose, body.allow_internet_access]),
        [["agent", true], ["evaluate", false]],
      );
    },
  );
});

Deno.test("a rollout through E2B installs Qwen Code offline from its tarball with npm and solves the task", async () => {
  // Its optional dependencies (clipboard, terminal, images) are skipped; the CLI runs without.
  await e2bRollout(
    oneCommand(FIX_CALC, "Done.", undefined, qwenShell),
    { QWEN_CODE_TARBALL: await pinnedTarball("qwen-code", "@qwen-code/qwen-code") },
    {
      harness: "qwen_code",
      // Its settings file reaches it: the temperature it sets is the one the engine samples at.
      settings: { model: { generationConfig: { samplingParams: { temperature: 0.25 } } } },
    },
    (_view, gw) => {
      const calls = gw.engine.calls.filter((call) => call.output && call.output.length > 0);
      assert.deepEqual(calls.map((call) => call.sampling.temperature), [0.25, 0.25]);
    },
  );
});

Deno.test("a rollout through E2B unpacks Codex's binary from its platform tarball and solves the task", async () => {
  await e2bRollout(
    oneCommand(FIX_CALC, "Done.", undefined, (cmd) => toolCall("exec_command", { cmd })),
    { CODEX_TARBALL: await pinnedTarball("codex", "@openai/codex") },
    { harness: "codex", config: { model_reasoning_effort: "low" } },
    (_view, gw) => {
      // A config override reaches the CLI: it sends the effort it was given.
      const sent = gw.exchanges.filter((e) => e.path === "/v1/responses").map((e) =>
        JSON.parse(e.body).reasoning
      );
      assert.deepEqual(sent, [{ effort: "low" }, { effort: "low" }]);
    },
  );
});

Deno.test("a gateway that shuts down hands its running job back, and another one finishes it", async () => {
  const marker = `rg_handback_${crypto.randomUUID().slice(0, 8)}`;
  const first = await startGateway({
    script: [{ text: "Thinking for a long time.", latencyMs: 2000 }],
    worker: true,
  });
  const second = await startGateway({ script: oneCommand(FIX_CALC), kv: first.kv });
  try {
    const { task } = await fixtureTask("python_unittest");
    const submitted = await submit(first, {
      task,
      agent: { prompt_template: `{problem_statement}\n${marker}` },
    });
    const id = submitted.jobs[0].id;
    await awaitJob(first, id, () => first.engine.inFlight() > 0);
    await first.deps.rollout.stop();
    const handedBack = await job(first, id);
    assert.deepEqual(
      [handedBack.phase, handedBack.attempt, handedBack.detail],
      ["queued", 1, "Attempt 1 was stopped by a shutdown"],
    );
    assert.deepEqual(await processesWith(marker), []);
    // The agent's turn ends when the gateway sees its connection gone and aborts the generation,
    // a moment after the agent is killed: nothing is left generating for it.
    await waitFor(
      () => Promise.resolve(first.engine.inFlight() === 0),
      "the agent's generation to end",
    );
    second.deps.rollout.start();
    const view = await awaitJob(second, id);
    assert.deepEqual([view.phase, view.attempt, view.result.reward.score], ["done", 2, 1]);
    assert.equal(view.sessions.length, 2);
  } finally {
    await second.close();
    await first.close();
  }
});

Deno.test("on_agent_timeout: evaluate grades the work of an agent stopped at its budget", async () => {
  const marker = `rg_graded_${crypto.randomUUID().slice(0, 8)}`;
  // The agent (a command, so that its fix lands in milliseconds, long before the budget on any
  // machine) fixes the file, then starts something that never ends.
  const gw = await startGateway({ script: [{ text: "unreachable" }], worker: true });
  try {
    const { task, gold } = await fixtureTask("python_unittest");
    const submitted = await submit(gw, {
      task,
      agent: {
        harness: "command",
        command:
          `${FIX_CALC} && : {prompt} && python3 -c 'import time; time.sleep(1000)' # ${marker}`,
      },
      budgets: { agent_ms: 2000, on_agent_timeout: "evaluate" },
    });
    const view = await awaitJob(gw, submitted.jobs[0].id);
    assert.deepEqual(
      [
        view.phase,
        view.result.agent.timed_out,
        view.result.agent.exit_code,
        view.result.reward.score,
      ],
      ["done", true, null, 1],
    );
    assert.equal(view.result.patch, gold);
    assert.deepEqual(await processesWith(marker), []);
  } finally {
    await gw.close();
  }
});
