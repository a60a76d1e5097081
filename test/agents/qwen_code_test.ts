import assert from "node:assert/strict";
import { agentSettings } from "./_settings.ts";
import {
  findNode,
  findQwenCode,
  qwenCodeCommand,
  qwenCodeEnv,
  qwenCodeLocal,
} from "../../lib/agents/mod.ts";

const agent = (settings: Record<string, unknown> = {}) => agentSettings("qwen_code", settings);

Deno.test("qwenCodeCommand() runs the CLI headless, the prompt one `--prompt=` word so it is never an option", () => {
  assert.equal(
    qwenCodeCommand("qwen", agent(), "--fix it's bug"),
    "qwen --approval-mode yolo --output-format stream-json '--prompt=--fix it'\\''s bug'",
  );
  assert.equal(
    qwenCodeCommand(
      "/sandbox/tools/node /sandbox/tools/qwen-code/cli-entry.js",
      agent({
        approval_mode: "auto-edit",
        max_turns: 12,
        allowed_tools: ["run_shell_command(git)", "write_file"],
        exclude_tools: ["web_fetch"],
      }),
      "go",
    ),
    "/sandbox/tools/node /sandbox/tools/qwen-code/cli-entry.js --approval-mode auto-edit " +
      "--output-format stream-json --max-session-turns 12 " +
      "'--allowed-tools=run_shell_command(git)' --allowed-tools=write_file " +
      "--exclude-tools=web_fetch --prompt=go",
  );
});

Deno.test("qwenCodeEnv() points the CLI at the gateway's /v1 with the session token", () => {
  assert.deepEqual(
    qwenCodeEnv(agent({ env: { FOO: "1" } }), {
      baseUrl: "http://127.0.0.1:8080",
      token: "s1.secret",
      model: "qwen3",
      contextLength: 40_960,
    }, "/tmp/qwen-code-settings.json"),
    {
      OPENAI_BASE_URL: "http://127.0.0.1:8080/v1",
      OPENAI_API_KEY: "s1.secret",
      OPENAI_MODEL: "qwen3",
      QWEN_CODE_SYSTEM_SETTINGS_PATH: "/tmp/qwen-code-settings.json",
      QWEN_USAGE_STATISTICS_ENABLED: "false",
      QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
      FOO: "1",
    },
  );
  assert.equal(
    qwenCodeEnv(agent({ model: "qwen3-8b" }), {
      baseUrl: "u",
      token: "t",
      model: "m",
      contextLength: 4096,
    }, "/s")
      .OPENAI_MODEL,
    "qwen3-8b",
  );
});

Deno.test("findQwenCode() finds the pinned CLI, findNode() its node; both are lent to a local sandbox", async () => {
  const node = await findNode(null);
  assert.ok(node !== null, "node is on PATH");
  assert.equal(node, await Deno.realPath(node));
  assert.equal(await findNode(node), node);
  assert.equal(await findNode("/nonexistent/node"), null);
  const found = await findQwenCode(null, node);
  assert.ok(found !== null, "tools/setup.ts installs Qwen Code in tools/qwen-code");
  assert.ok(found.nodeModules.endsWith("/tools/qwen-code/node_modules"), found.nodeModules);
  assert.deepEqual(qwenCodeLocal(found), {
    binds: [
      { host: node, inside: "/sandbox/tools/node" },
      { host: found.nodeModules, inside: "/sandbox/tools/qwen-code/node_modules" },
    ],
    program: "/sandbox/tools/node " +
      "/sandbox/tools/qwen-code/node_modules/@qwen-code/qwen-code/cli-entry.js",
  });
  // Its npm bin link names the same install.
  assert.deepEqual(await findQwenCode(`${found.nodeModules}/.bin/qwen`, node), found);
  assert.equal(await findQwenCode("/nonexistent/cli-entry.js", node), null);
  // A file that is not the CLI's entry point is not taken for it.
  assert.equal(await findQwenCode(node, node), null);
});
