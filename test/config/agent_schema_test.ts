import assert from "node:assert/strict";
import { AGENTS, installVariables } from "../../lib/agents/mod.ts";
import { CONFIG_DECLARATIONS, resolveConfig } from "../../lib/config/mod.ts";

Deno.test("every listed agent with a CLI package has its three install variables, and its extra ones", () => {
  const declared = new Map(CONFIG_DECLARATIONS.map((variable) => [variable.name, variable]));
  const packaged = AGENTS.filter((agent) => agent.package !== undefined);
  assert.deepEqual(packaged.map((agent) => agent.name), ["claude_code", "qwen_code", "codex"]);
  for (const agent of AGENTS) {
    if (agent.package === undefined) continue;
    const names = installVariables(agent.install);
    assert.deepEqual(names, {
      bin: `${agent.install.prefix}_BIN`,
      package: `${agent.install.prefix}_PACKAGE`,
      tarball: `${agent.install.prefix}_TARBALL`,
    });
    for (const [key, name] of Object.entries(names)) {
      assert.deepEqual(declared.get(name)?.path, ["rollout", "agents", agent.name, key], name);
    }
    for (const { variable } of agent.install.extra ?? []) {
      assert.deepEqual(
        declared.get(variable)?.path,
        ["rollout", "agents", agent.name, "extra", variable],
        variable,
      );
    }
  }
  // Nothing else lives under rollout.agents, and an agent without a package has no settings.
  const installed = CONFIG_DECLARATIONS.filter(({ path }) => path[1] === "agents");
  assert.deepEqual(installed.map(({ name }) => name), [
    "CLAUDE_CODE_BIN",
    "CLAUDE_CODE_PACKAGE",
    "CLAUDE_CODE_TARBALL",
    "QWEN_CODE_BIN",
    "QWEN_CODE_PACKAGE",
    "QWEN_CODE_TARBALL",
    "NODE_BIN",
    "CODEX_BIN",
    "CODEX_PACKAGE",
    "CODEX_TARBALL",
  ]);
  assert.deepEqual([...resolveConfig({}).rollout.agents.keys()], [
    "claude_code",
    "qwen_code",
    "codex",
  ]);
});

Deno.test("the install variables' documentation is worded from each agent's declaration", () => {
  const about = (name: string) => {
    const found = CONFIG_DECLARATIONS.find((variable) => variable.name === name)!;
    return [found.expected, found.shown, found.meaning];
  };
  assert.deepEqual(about("QWEN_CODE_PACKAGE"), [
    "an npm package spec",
    "the version `tools/qwen-code/package.json` pins",
    "what an E2B sandbox without `qwen` installs with npm",
  ]);
  assert.deepEqual(about("CODEX_TARBALL"), [
    "an absolute file path",
    "unset",
    "an npm tarball of Codex's platform package on this host (its static binary inside), " +
    "uploaded to an E2B sandbox without `codex` and unpacked instead",
  ]);
  assert.deepEqual(about("QWEN_CODE_TARBALL"), [
    "an absolute file path",
    "unset",
    "an npm tarball of Qwen Code on this host, uploaded to an E2B sandbox without `qwen` and " +
    "installed offline instead",
  ]);
});
