import assert from "node:assert/strict";
import { TaskSchema } from "../../lib/evaluate/mod.ts";
import {
  claudeCodeCommand,
  claudeCodeEnv,
  fillPrompt,
  readAgentLog,
  RolloutRequestSchema,
} from "../../lib/rollout/mod.ts";

const TASK = {
  repo: "/r",
  base_commit: "abc1234",
  problem_statement: "It's broken.",
  eval_cmd: "true",
};

function agent(settings: Record<string, unknown> = {}) {
  return RolloutRequestSchema.parse({ task: TASK, agent: settings }).agent;
}

Deno.test("claudeCodeCommand() runs the CLI headless with the request's settings, quoted for the shell", () => {
  assert.equal(
    claudeCodeCommand("/sandbox/tools/claude", agent(), "Fix it's bug"),
    "/sandbox/tools/claude -p 'Fix it'\\''s bug' --output-format stream-json --verbose --permission-mode bypassPermissions",
  );
  assert.equal(
    claudeCodeCommand(
      "claude",
      agent({
        permission_mode: "acceptEdits",
        max_turns: 12,
        allowed_tools: ["Bash(git:*)", "Edit"],
        disallowed_tools: ["WebFetch", "WebSearch"],
      }),
      "go",
    ),
    "claude -p go --output-format stream-json --verbose --permission-mode acceptEdits --max-turns 12 --allowedTools 'Bash(git:*),Edit' --disallowedTools WebFetch,WebSearch",
  );
});

Deno.test("claudeCodeEnv() points the CLI at the gateway with the session token", () => {
  assert.deepEqual(
    claudeCodeEnv(agent({ auto_compact_window: 120_000, env: { FOO: "1" } }), {
      baseUrl: "http://127.0.0.1:8080",
      token: "s1.secret",
      model: "qwen3",
    }),
    {
      ANTHROPIC_BASE_URL: "http://127.0.0.1:8080",
      ANTHROPIC_AUTH_TOKEN: "s1.secret",
      ANTHROPIC_MODEL: "qwen3",
      ANTHROPIC_SMALL_FAST_MODEL: "qwen3",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      IS_SANDBOX: "1",
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: "120000",
      FOO: "1",
    },
  );
  assert.equal(
    claudeCodeEnv(agent({ model: "qwen3-8b" }), { baseUrl: "u", token: "t", model: "m" })
      .ANTHROPIC_MODEL,
    "qwen3-8b",
  );
});

Deno.test("fillPrompt() puts the problem statement and its file name in the template", () => {
  const task = TaskSchema.parse(TASK);
  assert.equal(
    fillPrompt("Issue:\n{problem_statement}\nSee {problem_file}. {problem_statement}", task),
    "Issue:\nIt's broken.\nSee PROBLEM_STATEMENT.md. It's broken.",
  );
});

Deno.test("readAgentLog() takes the last result event and ignores lines cut by the output cap", () => {
  const log = [
    '{"type":"system","subtype":"init"}',
    '{"type":"assistant","message":{"content":[{"type":"text","text":"\\"result\\""}]}}',
    '{"type":"result","subtype":"error_max_turns","num_turns":3}',
    '{"type":"result","subtype":"success","num_turns":7,"result":"Done."}',
    '{"type":"result","subtype":"succ',
  ].join("\n");
  assert.deepEqual(readAgentLog(log), { numTurns: 7, result: "success" });
  assert.deepEqual(readAgentLog("not json\n"), { numTurns: null, result: null });
});
