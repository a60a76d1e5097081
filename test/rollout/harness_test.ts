import assert from "node:assert/strict";
import { z } from "zod";
import {
  type Agent,
  agentNamed,
  AGENTS,
  type CliSettings,
  COMMON_SETTINGS,
} from "../../lib/agents/mod.ts";
import { TaskSchema } from "../../lib/evaluate/mod.ts";
import {
  agentCommand,
  fillPrompt,
  prepareAgent,
  readAgentOutcome,
  RolloutRequestSchema,
  rolloutRequestSchema,
} from "../../lib/rollout/mod.ts";
import type { Sandbox } from "../../lib/sandbox/mod.ts";
import { TASK } from "./_settings.ts";

/** The settings of an agent CLI, parsed (a repository task never goes with the environment loop). */
const agent = (settings: Record<string, unknown>) =>
  RolloutRequestSchema.parse({ task: TASK, agent: settings }).agent as CliSettings;

/** A sandbox that only keeps what is written to it. */
function writableSandbox(): { sandbox: Sandbox; files: Map<string, string> } {
  const files = new Map<string, string>();
  const sandbox = {
    tmpdir: "/tmp",
    writeFile: (path: string, data: string | Uint8Array) => {
      files.set(path, typeof data === "string" ? data : new TextDecoder().decode(data));
      return Promise.resolve();
    },
  } as unknown as Sandbox;
  return { sandbox, files };
}

Deno.test("fillPrompt() puts the problem statement and its file name in the template", () => {
  const task = TaskSchema.parse(TASK);
  assert.equal(
    fillPrompt("Issue:\n{problem_statement}\nSee {problem_file}. {problem_statement}", task),
    "Issue:\nIt's broken.\nSee PROBLEM_STATEMENT.md. It's broken.",
  );
});

Deno.test("agentCommand() runs the harness the settings name", () => {
  const run = { program: "cli", prompt: "go", tmpdir: "/tmp" };
  assert.equal(
    agentCommand(agent({}), run),
    "cli -p go --output-format stream-json --verbose --permission-mode bypassPermissions",
  );
  assert.equal(
    agentCommand(agent({ harness: "qwen_code" }), run),
    "cli --approval-mode yolo --output-format stream-json --prompt=go",
  );
  assert.equal(
    agentCommand(agent({ harness: "codex" }), run),
    "cli exec --json --dangerously-bypass-approvals-and-sandbox --strict-config --skip-git-repo-check -- go </dev/null",
  );
  assert.equal(
    agentCommand(agent({ harness: "command", command: "python3 a.py {prompt} < {prompt_file}" }), {
      ...run,
      prompt: "it's {prompt_file}",
    }),
    "python3 a.py 'it'\\''s {prompt_file}' < /tmp/rollout-prompt.txt",
  );
});

Deno.test("prepareAgent() writes each harness's files and gives its environment", async () => {
  const connection = {
    baseUrl: "http://127.0.0.1:8080",
    token: "s1.secret",
    model: "qwen3",
    contextLength: 40_960,
  };
  const claude = writableSandbox();
  const claudeEnv = await prepareAgent(claude.sandbox, agent({}), connection, "go");
  assert.equal(claudeEnv.ANTHROPIC_BASE_URL, "http://127.0.0.1:8080");
  assert.equal(claude.files.size, 0);

  const qwen = writableSandbox();
  const qwenEnv = await prepareAgent(
    qwen.sandbox,
    agent({ harness: "qwen_code", settings: { model: { maxRetries: 1 } } }),
    connection,
    "go",
  );
  assert.equal(qwenEnv.OPENAI_BASE_URL, "http://127.0.0.1:8080/v1");
  assert.equal(qwenEnv.QWEN_CODE_SYSTEM_SETTINGS_PATH, "/tmp/qwen-code-settings.json");
  assert.deepEqual([...qwen.files], [[
    "/tmp/qwen-code-settings.json",
    '{"model":{"maxRetries":1}}',
  ]]);

  const codex = writableSandbox();
  const codexEnv = await prepareAgent(codex.sandbox, agent({ harness: "codex" }), connection, "go");
  assert.deepEqual(codexEnv, { CODEX_HOME: "/tmp/codex-home", ROLLOUT_GATEWAY_TOKEN: "s1.secret" });
  const config = codex.files.get("/tmp/codex-home/config.toml")!;
  assert.match(config, /^model = "qwen3"$/m);
  assert.match(config, /^model_context_window = 40960$/m);
  assert.match(config, /^base_url = "http:\/\/127\.0\.0\.1:8080\/v1"$/m);
  assert.match(config, /^env_key = "ROLLOUT_GATEWAY_TOKEN"$/m);

  const command = writableSandbox();
  const commandEnv = await prepareAgent(
    command.sandbox,
    agent({ harness: "command", command: "agent {prompt_file}", model_env: "MODEL" }),
    connection,
    "Fix it.",
  );
  assert.deepEqual(commandEnv, {
    OPENAI_BASE_URL: "http://127.0.0.1:8080/v1",
    OPENAI_API_KEY: "s1.secret",
    MODEL: "qwen3",
  });
  assert.deepEqual([...command.files], [["/tmp/rollout-prompt.txt", "Fix it."]]);
});

Deno.test("readAgentOutcome() reads Claude Code's and Qwen Code's result event, Codex's turn events, a command's nothing", () => {
  const result = '{"type":"result","subtype":"success","num_turns":3}';
  assert.deepEqual(readAgentOutcome(agent({}), result), { numTurns: 3, result: "success" });
  assert.deepEqual(readAgentOutcome(agent({ harness: "qwen_code" }), result), {
    numTurns: 3,
    result: "success",
  });
  const codexLog = [
    '{"type":"thread.started","thread_id":"t"}',
    '{"type":"turn.started"}',
    '{"type":"item.completed","item":{"type":"agent_message","text":"{\\"type\\":\\"turn.failed\\"}"}}',
    '{"type":"turn.completed","usage":{"input_tokens":5}}',
  ].join("\n");
  assert.deepEqual(readAgentOutcome(agent({ harness: "codex" }), codexLog), {
    numTurns: null,
    result: "success",
  });
  assert.deepEqual(
    readAgentOutcome(agent({ harness: "codex" }), '{"type":"turn.failed","error":{"message":"x"}}'),
    { numTurns: null, result: "error" },
  );
  assert.deepEqual(readAgentOutcome(agent({ harness: "command", command: "a {prompt}" }), result), {
    numTurns: null,
    result: null,
  });
});

Deno.test("every listed agent has its own name, a schema of that name, and a default first", () => {
  const names = AGENTS.map((harness) => harness.name);
  assert.deepEqual(names, ["claude_code", "qwen_code", "codex", "command"]);
  for (const harness of AGENTS) {
    assert.equal(agentNamed(harness.name), harness);
    const own = harness.name === "command" ? { command: "run {prompt}" } : {};
    assert.equal(agent({ harness: harness.name, ...own }).harness, harness.name);
  }
  assert.equal(agent({}).harness, "claude_code");
  assert.equal(agentNamed("env_loop"), undefined);
});

Deno.test("rolloutRequestSchema() takes a harness that is not registered only when given it", () => {
  const echo: Agent<{ harness: "echo"; prompt_template: string; env: Record<string, string> }> = {
    name: "echo",
    title: "Echo",
    agentHeaders: null,
    dispatchTools: [],
    settings: z.strictObject({ harness: z.literal("echo"), ...COMMON_SETTINGS }),
    installHint: "every shell has it",
    findLocal: () => Promise.resolve({ binds: [], program: "echo" }),
    command: (_settings, run) => `${run.program} ${run.prompt}`,
    prepare: () => Promise.resolve({}),
    outcome: () => ({ numTurns: null, result: null }),
    commandWords: () => [],
  };
  const body = { task: TASK, agent: { harness: "echo" } };
  assert.equal(rolloutRequestSchema([...AGENTS, echo]).parse(body).agent.harness, "echo");
  const refused = RolloutRequestSchema.safeParse(body);
  assert.equal(refused.success, false);
  assert.deepEqual(refused.error?.issues.map((issue) => [issue.path, issue.code]), [
    [["agent", "harness"], "invalid_union"],
  ]);
});
