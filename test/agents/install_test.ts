import assert from "node:assert/strict";
import {
  agentInstalls,
  AGENTS,
  codexVendorPath,
  pinnedSpec,
  toolsFolder,
} from "../../lib/agents/mod.ts";
import { resolveConfig } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors/mod.ts";

Deno.test("each harness's E2B install is the version tools/<folder>/package.json pins, unless configured", async () => {
  const defaults = resolveConfig({}).rollout.agents;
  const installs = await agentInstalls(defaults);
  assert.deepEqual([...installs.keys()], ["claude_code", "qwen_code", "codex", "command"]);
  assert.deepEqual(
    [...installs.values()].map((install) => install.npm),
    [
      { package: "@anthropic-ai/claude-code@2.1.329", tarball: null, bin: "claude" },
      { package: "@qwen-code/qwen-code@0.24.4", tarball: null, bin: "qwen" },
      { package: "@openai/codex@0.169.0", tarball: null, bin: "codex", unpack: codexVendorPath() },
      null,
    ],
  );
  for (const harness of AGENTS) {
    if (harness.package === undefined) continue;
    const manifest = JSON.parse(
      await Deno.readTextFile(`${toolsFolder(harness.package.folder)}package.json`),
    );
    assert.equal(
      await pinnedSpec(harness.package),
      `${harness.package.name}@${manifest.dependencies[harness.package.name]}`,
    );
  }
  const configured = resolveConfig({ CODEX_PACKAGE: "@openai/codex@0.170.0" }).rollout.agents;
  assert.equal(
    (await agentInstalls(configured)).get("codex")?.npm?.package,
    "@openai/codex@0.170.0",
  );
});

Deno.test("a configured path that is not a file is refused at start-up, naming its variable", async () => {
  for (
    const variable of ["CLAUDE_CODE_BIN", "CODEX_BIN", "NODE_BIN", "CODEX_TARBALL"]
  ) {
    const agents = resolveConfig({ [variable]: "/nonexistent/file" }).rollout.agents;
    await assert.rejects(agentInstalls(agents), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.variable, variable);
      assert.equal(error.message, `Invalid ${variable}: no file at "/nonexistent/file"`);
      return true;
    });
  }
});
