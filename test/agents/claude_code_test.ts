import assert from "node:assert/strict";
import { agentSettings } from "./_settings.ts";
import { claudeCodeCommand, claudeCodeEnv } from "../../lib/agents/mod.ts";

const agent = (settings: Record<string, unknown> = {}) => agentSettings("claude_code", settings);

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
      contextLength: 40_960,
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
    claudeCodeEnv(agent({ model: "qwen3-8b" }), {
      baseUrl: "u",
      token: "t",
      model: "m",
      contextLength: 4096,
    })
      .ANTHROPIC_MODEL,
    "qwen3-8b",
  );
});
