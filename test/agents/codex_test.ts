import assert from "node:assert/strict";
import { agentSettings } from "./_settings.ts";
import { codexCommand, codexConfig, codexEnv, findCodex } from "../../lib/agents/mod.ts";

const agent = (settings: Record<string, unknown> = {}) => agentSettings("codex", settings);

Deno.test("codexCommand() runs exec headless, each config entry a -c override, the prompt after --", () => {
  assert.equal(
    codexCommand("/sandbox/tools/codex", agent(), "review it's -x"),
    "/sandbox/tools/codex exec --json --dangerously-bypass-approvals-and-sandbox --strict-config " +
      "--skip-git-repo-check -- 'review it'\\''s -x' </dev/null",
  );
  assert.equal(
    codexCommand(
      "codex",
      agent({
        config: {
          model_reasoning_effort: "high",
          "model_providers.gateway.stream_idle_timeout_ms": 60_000,
          "tools.view_image": false,
          quoted: 'a "b"',
        },
      }),
      "go",
    ),
    "codex exec --json --dangerously-bypass-approvals-and-sandbox --strict-config " +
      "--skip-git-repo-check -c 'model_reasoning_effort=\"high\"' " +
      "-c model_providers.gateway.stream_idle_timeout_ms=60000 -c tools.view_image=false " +
      `-c 'quoted="a \\"b\\""' -- go </dev/null`,
  );
});

Deno.test("codexConfig() makes the gateway the provider over the Responses API, with nothing else reachable", () => {
  const config = codexConfig({ baseUrl: "http://gw:8080/v1", model: 'q"3', contextWindow: 1000 });
  for (
    const line of [
      'model = "q\\"3"',
      'model_provider = "gateway"',
      'approval_policy = "never"',
      'sandbox_mode = "danger-full-access"',
      "check_for_update_on_startup = false",
      'web_search = "disabled"',
      "model_context_window = 1000",
      'base_url = "http://gw:8080/v1"',
      'env_key = "ROLLOUT_GATEWAY_TOKEN"',
      'wire_api = "responses"',
    ]
  ) {
    assert.ok(config.split("\n").includes(line), line);
  }
  for (const table of ["agents", "analytics", "feedback"]) {
    assert.match(config, new RegExp(`\\[${table}\\]\\nenabled = false`));
  }
  assert.doesNotMatch(config, /max_retries/, "Codex's own retries unless asked");
  assert.match(
    codexConfig({ baseUrl: "u", model: "m", contextWindow: 1, maxRetries: 0 }),
    /request_max_retries = 0\nstream_max_retries = 0/,
  );
});

Deno.test("codexEnv() names the home and the key; findCodex() finds the pinned binary", async () => {
  const connection = { baseUrl: "u", token: "s1.t", model: "m", contextLength: 1 };
  assert.deepEqual(codexEnv(agent({ env: { A: "1" } }), connection, "/tmp/h"), {
    CODEX_HOME: "/tmp/h",
    ROLLOUT_GATEWAY_TOKEN: "s1.t",
    A: "1",
  });
  const found = await findCodex(null);
  assert.ok(found?.endsWith("/bin/codex"), String(found));
  assert.equal(await findCodex(found), found);
  assert.equal(await findCodex("/nonexistent/codex"), null);
});
