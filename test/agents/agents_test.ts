import assert from "node:assert/strict";
import {
  agentNamed,
  AGENTS,
  CLAUDE_CODE,
  CODEX,
  COMMAND,
  QWEN_CODE,
} from "../../lib/agents/mod.ts";

Deno.test("AGENTS lists each agent once, by a name no other agent has", () => {
  const names = AGENTS.map((agent) => agent.name);
  assert.equal(new Set(names).size, names.length);
  assert.deepEqual([...AGENTS], [CLAUDE_CODE, QWEN_CODE, CODEX, COMMAND]);
  for (const agent of AGENTS) assert.equal(agentNamed(agent.name), agent);
});

Deno.test("an agent with a CLI package declares its install; one bringing its own program neither", () => {
  for (const agent of AGENTS) {
    assert.equal(agent.install === undefined, agent.package === undefined, agent.name);
  }
  assert.equal(COMMAND.package, undefined);
  assert.deepEqual(
    AGENTS.flatMap((agent) => agent.install === undefined ? [] : [agent.install.prefix]),
    ["CLAUDE_CODE", "QWEN_CODE", "CODEX"],
  );
});
