/**
 * The environment loop end to end: `/rollout` with `agent.harness: "env_loop"` against the
 * retail fixture environment over HTTP, the scripted engine as the agent (and as the user
 * simulator's model), the episode recorded token for token.
 */
import assert from "node:assert/strict";
import { type RetailEnv, startRetailEnv } from "../../fixtures/retail_env.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import { awaitJob, submit } from "./_rollout.ts";
import { agentCalls, isUserSimulator, retailAgent, retailScript } from "./_retail.ts";

async function withRetail(
  test: (gw: TestGateway, env: RetailEnv) => Promise<void>,
  options: Parameters<typeof startGateway>[0] = {},
): Promise<void> {
  const gw = await startGateway({ script: retailScript, worker: true, ...options });
  const env = await startRetailEnv();
  try {
    await test(gw, env);
  } finally {
    await env.close();
    await gw.close();
  }
}

Deno.test("env_loop: a retail episode ends COMPLETED with the environment's reward 1, its chain exact", async () => {
  await withRetail(async (gw, env) => {
    const { jobs } = await submit(gw, {
      task: { environment: env.url, task_index: 0 },
      agent: { harness: "env_loop", max_steps: 10 },
    });
    const view = await awaitJob(gw, jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.deepEqual(view.result.reward, {
      score: 1,
      status: "COMPLETED",
      steps: 6,
      turns: 6,
      info: { steps_said: 3, reward: 1 },
    });
    assert.equal(view.result.patch, null);
    assert.deepEqual(
      [view.result.agent.result, view.result.agent.num_turns, view.result.agent.exit_code],
      ["COMPLETED", 6, null],
    );
    // The environment saw the episode's actions, in order, under the episode's id.
    assert.deepEqual(
      env.calls.map((call) =>
        call.path === "/reset"
          ? `reset ${call.body.task_index}`
          : (call.body.action as { name: string }).name
      ),
      [
        "reset 0",
        "find_user_id_by_email",
        "respond",
        "get_order_details",
        "respond",
        "cancel_pending_order",
        "respond",
      ],
    );
    assert.ok(env.calls.every((call) => call.body.episode_id === view.session_id));
    // One chain, token-exact against the six engine calls, rewarded with the environment's 1.
    const samples = view.result.samples.samples;
    const calls = agentCalls(gw);
    assert.equal(calls.length, 6);
    assertChainExact(calls, samples);
    assert.equal(samples[0].reward, 1);
    assert.deepEqual(samples[0].turns.map((turn: { flags: string[] }) => turn.flags), [
      [],
      [],
      [],
      [],
      [],
      [],
    ]);
    // The policy and the tools came from the environment's reset.
    const first = gw.deps.tokenizer.decode(calls[0].inputIds);
    assert.ok(first.startsWith("<|im_start|>system\n# Retail agent policy"), first.slice(0, 80));
    assert.ok(first.includes('"name": "cancel_pending_order"'));
    assert.match(view.result.agent.log_tail, /step 5: cancel_pending_order .* \(reward 0\)/);
  });
});

Deno.test("env_loop: an episode that reaches max_steps ends TRUNCATED, its chain exact", async () => {
  await withRetail(async (gw, env) => {
    const { jobs } = await submit(gw, {
      task: { environment: env.url, task_index: 0 },
      agent: { harness: "env_loop", max_steps: 3 },
    });
    const view = await awaitJob(gw, jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.deepEqual(
      [view.result.reward.score, view.result.reward.status, view.result.reward.steps],
      [0, "TRUNCATED", 3],
    );
    assert.equal(env.calls.length, 4, "reset and three steps");
    const calls = agentCalls(gw);
    assert.equal(calls.length, 3);
    assertChainExact(calls, view.result.samples.samples);
  });
});

Deno.test("env_loop: an engine that fails mid-episode ends it ABORTED with what it had", async () => {
  let agentTurns = 0;
  await withRetail(async (gw, env) => {
    const { jobs } = await submit(gw, {
      task: { environment: env.url, task_index: 0 },
      agent: { harness: "env_loop", max_steps: 10 },
      // One attempt: the engine stays down (a retry would fail alike).
      max_attempts: 1,
    });
    const view = await awaitJob(gw, jobs[0].id);
    assert.equal(view.phase, "aborted", JSON.stringify(view));
    assert.deepEqual([view.reason, view.outcome], ["model_failed", "infra"]);
    assert.match(view.detail, /^Turn 3 failed \(HTTP 529\)/);
    assert.deepEqual([view.result.agent.result, view.result.agent.num_turns], ["ABORTED", 2]);
    assert.equal(view.result.reward, null);
    // The third turn was tried four times: the loop tries again what the gateway says to.
    assert.equal(gw.engine.calls.filter((call) => call.output === undefined).length, 4);
    assert.equal(env.calls.length, 3, "reset and two steps");
    const session = await (await fetch(`${gw.url}/sessions/${view.session_id}`, {
      headers: ADMIN_HEADERS,
    })).json();
    assert.equal(session.closed_as, "aborted");
  }, {
    env: { RETRY_AFTER_MS: "5" },
    faultFor: () => agentTurns >= 2 ? { kind: "unavailable" } : undefined,
    script: (call, promptText) => {
      if (!isUserSimulator(promptText())) agentTurns++;
      return retailAgent(call, promptText);
    },
  });
  assert.equal(agentTurns, 2);
});

Deno.test("env_loop: the user simulator asks a model through the gateway in a session of its own", async () => {
  await withRetail(async (gw, env) => {
    const { jobs } = await submit(gw, {
      task: { environment: env.url, task_index: 1 },
      agent: { harness: "env_loop", user: "model" },
    });
    const view = await awaitJob(gw, jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.deepEqual(
      [view.result.reward.score, view.result.reward.status, view.result.reward.turns],
      [1, "COMPLETED", 2],
    );
    // Reset was told where the user's model is: Chat Completions here, with a session's token.
    const reset = env.calls[0].body.user_model as Record<string, string>;
    assert.equal(reset.base_url, `${gw.url}/v1`);
    const userSessionId = `${view.session_id}_user`;
    const userSession = await (await fetch(`${gw.url}/sessions/${userSessionId}`, {
      headers: ADMIN_HEADERS,
    })).json();
    assert.equal(userSession.metadata.role, "user_simulator");
    assert.equal(userSession.metadata.episode_session, view.session_id);
    assert.equal(userSession.closed_as, "completed");
    // The agent's chain holds the agent's turns only, exact; the user's turns are in their own.
    const calls = agentCalls(gw);
    assert.equal(calls.length, 2);
    assertChainExact(calls, view.result.samples.samples);
    const userSamples = await gw.samples(userSessionId);
    const userCalls = callsOfSample(gw.engine.calls, userSamples[0]);
    assert.equal(userCalls.length, 2);
    assertChainExact(userCalls, userSamples);
  });
});

Deno.test("env_loop: an environment that cannot be reached fails the sample with env_failed", async () => {
  await withRetail(async (gw) => {
    const { jobs } = await submit(gw, {
      task: { environment: "http://127.0.0.1:9", task_index: 0 },
      agent: { harness: "env_loop", env_timeout_ms: 2000 },
    });
    const view = await awaitJob(gw, jobs[0].id);
    assert.equal(view.phase, "failed", JSON.stringify(view));
    assert.equal(view.reason, "env_failed");
    assert.match(view.detail, /^The environment's \/reset failed: /);
    assert.equal(gw.engine.calls.length, 0);
  });
});

Deno.test("env_loop: a harness and a task that do not go together are refused with 400", async () => {
  await withRetail(async (gw, env) => {
    const post = (body: unknown) =>
      fetch(`${gw.url}/rollout`, {
        method: "POST",
        headers: ADMIN_HEADERS,
        body: JSON.stringify(body),
      }).then(async (response) => [response.status, (await response.json()).error.message]);
    assert.deepEqual(await post({ task: { environment: env.url, task_index: 0 } }), [
      400,
      "task: the claude_code harness works on a repository: task.environment is for env_loop",
    ]);
    assert.deepEqual(
      await post({
        task: { repo: "fixture:python_unittest", base_commit: "HEAD", eval_cmd: "true" },
        agent: { harness: "env_loop" },
      }),
      [
        400,
        "task: the env_loop harness runs a tool environment: give task.environment and task.task_index",
      ],
    );
    assert.deepEqual(
      await post({
        task: { environment: "file:///etc/passwd", task_index: 0 },
        agent: { harness: "env_loop" },
      }),
      [400, "task.environment: expected an http(s) URL"],
    );
    assert.deepEqual(
      await post({
        task: { environment: env.url, task_index: -1, x: 1 },
        agent: { harness: "env_loop" },
      }),
      [400, "task.task_index: Too small: expected number to be >=0; unknown field task.x"],
    );
  });
});
