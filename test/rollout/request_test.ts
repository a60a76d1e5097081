import assert from "node:assert/strict";
import { DEFAULT_PROMPT } from "../../lib/agents/mod.ts";
import { RolloutRequestSchema } from "../../lib/rollout/mod.ts";

const TASK = {
  repo: "/srv/r",
  base_commit: "abc1234",
  problem_statement: "Fix it.",
  eval_cmd: "make test",
};

Deno.test("RolloutRequestSchema fills every default around the minimal body", () => {
  const request = RolloutRequestSchema.parse({ task: TASK, n: 1 });
  assert.deepEqual({ ...request, task: null }, {
    task: null,
    n: 1,
    agent: {
      harness: "claude_code",
      prompt_template: DEFAULT_PROMPT,
      permission_mode: "bypassPermissions",
      disallowed_tools: [],
      env: {},
    },
    sandbox: {},
    budgets: {
      agent_ms: 1_800_000,
      margin_ms: 120_000,
      on_agent_timeout: "abort",
      boot_ms: 600_000,
    },
    max_attempts: 3,
    retry_backoff_ms: 1000,
    metadata: {},
    record_messages: false,
  });
});

Deno.test("RolloutRequestSchema fills Qwen Code's defaults: yolo, no background memory agents", () => {
  const request = RolloutRequestSchema.parse({ task: TASK, agent: { harness: "qwen_code" } });
  assert.deepEqual(request.agent, {
    harness: "qwen_code",
    prompt_template: DEFAULT_PROMPT,
    approval_mode: "yolo",
    exclude_tools: [],
    env: {},
    settings: {
      memory: {
        enableManagedAutoMemory: false,
        enableManagedAutoDream: false,
        enableAutoSkill: false,
      },
      privacy: { usageStatisticsEnabled: false },
    },
  });
  // A copy each time: one request's settings are not another's.
  const again = RolloutRequestSchema.parse({ task: TASK, agent: { harness: "qwen_code" } });
  assert.notEqual(
    (again.agent as { settings: unknown }).settings,
    (request.agent as { settings: unknown }).settings,
  );
  const given = RolloutRequestSchema.parse({
    task: TASK,
    agent: { harness: "qwen_code", settings: { model: { maxRetries: 2 } }, max_turns: 30 },
  });
  assert.deepEqual(
    [
      (given.agent as { settings: unknown }).settings,
      (given.agent as { max_turns?: number }).max_turns,
    ],
    [{ model: { maxRetries: 2 } }, 30],
  );
});

Deno.test("RolloutRequestSchema refuses unknown settings and out-of-range values, naming them", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ n: 0 }, "n"],
    [{ n: 257 }, "n"],
    [{ agent: { harness: "aider" } }, "agent.harness"],
    [{ agent: { auto_compact_window: 50_000 } }, "agent.auto_compact_window"],
    [{ agent: { disallowed_tools: ["Bash,Edit"] } }, "agent.disallowed_tools.0"],
    [{ agent: { temperature: 1 } }, "agent"],
    // Each harness takes its own settings only.
    [{ agent: { harness: "qwen_code", permission_mode: "plan" } }, "agent"],
    [{ agent: { harness: "claude_code", approval_mode: "yolo" } }, "agent"],
    [{ agent: { harness: "qwen_code", approval_mode: "always" } }, "agent.approval_mode"],
    [{ agent: { harness: "qwen_code", exclude_tools: ["a b"] } }, "agent.exclude_tools.0"],
    [{ agent: { harness: "qwen_code", settings: [] } }, "agent.settings"],
    [{ agent: "qwen_code" }, "agent"],
    [{ agent: { harness: "codex", max_turns: 3 } }, "agent"],
    [{ agent: { harness: "codex", config: { "bad key": 1 } } }, "agent.config.bad key"],
    [{ agent: { harness: "codex", config: { model: { nested: 1 } } } }, "agent.config.model"],
    [{ agent: { harness: "command" } }, "agent.command"],
    [{ agent: { harness: "command", command: "agent --go" } }, "agent.command"],
    [{ agent: { harness: "command", command: "a {prompt}", token_env: "1X" } }, "agent.token_env"],
    [{ agent: { harness: "command", command: "a {prompt}", protocol: "grpc" } }, "agent.protocol"],
    [{ sandbox: { backend: "docker" } }, "sandbox.backend"],
    [{ budgets: { agent_ms: 10 } }, "budgets.agent_ms"],
    [{ budgets: { on_agent_timeout: "ignore" } }, "budgets.on_agent_timeout"],
    [{ max_attempts: 0 }, "max_attempts"],
    [{ record_messages: 1 }, "record_messages"],
    [{ task: { repo: "/r" } }, "task.base_commit"],
  ];
  for (const [fields, path] of cases) {
    const parsed = RolloutRequestSchema.safeParse({ task: TASK, ...fields });
    assert.equal(parsed.success, false, JSON.stringify(fields));
    assert.equal(parsed.error!.issues[0].path.join("."), path, JSON.stringify(fields));
  }
});

Deno.test("RolloutRequestSchema takes reward_allocation, and reward_mode as its old name", () => {
  const named = RolloutRequestSchema.parse({ task: TASK, reward_allocation: "final_only" });
  assert.equal(named.reward_allocation, "final_only");
  const old = RolloutRequestSchema.parse({ task: TASK, reward_mode: "copy" });
  assert.equal(old.reward_mode, "copy");
  const same = RolloutRequestSchema.safeParse({
    task: TASK,
    reward_allocation: "copy",
    reward_mode: "copy",
  });
  assert.equal(same.success, true);
  const conflict = RolloutRequestSchema.safeParse({
    task: TASK,
    reward_allocation: "copy",
    reward_mode: "uniform",
  });
  assert.equal(conflict.success, false);
  assert.deepEqual(conflict.error!.issues.map((issue) => issue.path), [["reward_mode"]]);
  assert.equal(
    RolloutRequestSchema.safeParse({ task: TASK, reward_allocation: "all" }).success,
    false,
  );
});
