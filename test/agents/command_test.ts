import assert from "node:assert/strict";
import { agentSettings } from "./_settings.ts";
import { agentCommandLine, commandEnv } from "../../lib/agents/mod.ts";

const agent = (settings: Record<string, unknown> = {}) => agentSettings("command", settings);

Deno.test("agentCommandLine() fills the prompt and its file in one pass, each quoted", () => {
  const settings = agent({ command: "run --task {prompt} --file {prompt_file} --again {prompt}" });
  assert.equal(
    agentCommandLine(settings, "it's {prompt_file} $(rm -rf /)", "/tmp/p.txt"),
    "run --task 'it'\\''s {prompt_file} $(rm -rf /)' --file /tmp/p.txt " +
      "--again 'it'\\''s {prompt_file} $(rm -rf /)'",
  );
});

Deno.test("commandEnv() puts the base URL for the protocol, the token and the model where the agent reads them", () => {
  const connection = { baseUrl: "http://gw", token: "s1.t", model: "m", contextLength: 1 };
  assert.deepEqual(commandEnv(agent({ command: "a {prompt}" }), connection), {
    OPENAI_BASE_URL: "http://gw/v1",
    OPENAI_API_KEY: "s1.t",
  });
  assert.deepEqual(
    commandEnv(
      agent({
        command: "a {prompt}",
        protocol: "anthropic",
        base_url_env: "ANTHROPIC_BASE_URL",
        token_env: "ANTHROPIC_AUTH_TOKEN",
        model_env: "ANTHROPIC_MODEL",
        model: "qwen3-8b",
        env: { EXTRA: "1" },
      }),
      connection,
    ),
    {
      ANTHROPIC_BASE_URL: "http://gw",
      ANTHROPIC_AUTH_TOKEN: "s1.t",
      ANTHROPIC_MODEL: "qwen3-8b",
      EXTRA: "1",
    },
  );
  // A name from the request is a name like any other, never the object's prototype.
  const hostile = commandEnv(
    agent({ command: "a {prompt}", token_env: "__proto__" }),
    connection,
  );
  assert.equal(Object.getPrototypeOf(hostile), Object.prototype);
  assert.deepEqual(Object.entries(hostile), [
    ["OPENAI_BASE_URL", "http://gw/v1"],
    ["__proto__", "s1.t"],
  ]);
});
