import assert from "node:assert/strict";
import {
  agentIdsOf,
  AGENTS,
  CLAUDE_CODE,
  dispatchToolsOf,
  type WireHabits,
} from "../../lib/agents/mod.ts";
import { LimitError, MAX_AGENT_ID_CHARS } from "../../lib/limits/mod.ts";

Deno.test("agentIdsOf() reads Claude Code's sub-agent headers, and null ids where none are sent", () => {
  assert.deepEqual(
    agentIdsOf(
      new Headers({ "x-claude-code-agent-id": "a1", "x-claude-code-parent-agent-id": "p1" }),
      AGENTS,
    ),
    { id: "a1", parentId: "p1" },
  );
  assert.deepEqual(agentIdsOf(new Headers({ "x-claude-code-agent-id": "" }), AGENTS), {
    id: null,
    parentId: null,
  });
  assert.deepEqual(agentIdsOf(new Headers(), AGENTS), { id: null, parentId: null });
});

Deno.test("agentIdsOf() refuses an oversized header by name, even one it would not read", () => {
  const long = "a".repeat(MAX_AGENT_ID_CHARS + 1);
  for (const name of ["x-claude-code-agent-id", "x-claude-code-parent-agent-id"]) {
    assert.throws(
      () => agentIdsOf(new Headers({ [name]: long }), AGENTS),
      (error: unknown) => error instanceof LimitError && error.field === name,
    );
  }
});

Deno.test("agentIdsOf() takes the first client whose headers name an agent", () => {
  const other: WireHabits = {
    name: "other",
    agentHeaders: { id: "x-other-agent", parentId: "x-other-parent" },
    dispatchTools: [],
  };
  const headers = new Headers({ "x-other-agent": "o1", "x-claude-code-agent-id": "c1" });
  assert.deepEqual(agentIdsOf(headers, [other, CLAUDE_CODE]), { id: "o1", parentId: null });
  assert.deepEqual(agentIdsOf(headers, [CLAUDE_CODE, other]), { id: "c1", parentId: null });
});

Deno.test("dispatchToolsOf() knows Claude Code's Agent and Task and Qwen Code's agent, by their task field", () => {
  const dispatch = dispatchToolsOf(AGENTS);
  assert.equal(dispatch.taskOf("Agent", { prompt: "A", description: "d" }), "A");
  assert.equal(dispatch.taskOf("Task", { prompt: "T" }), "T");
  assert.equal(dispatch.taskOf("agent", { prompt: "q", subagent_type: "general-purpose" }), "q");
  // Not a dispatch: another tool, a task that is not text, no task, an inherited one.
  assert.equal(dispatch.taskOf("Bash", { prompt: "ls" }), null);
  assert.equal(dispatch.taskOf("agent", { prompt: ["q"] }), null);
  assert.equal(dispatch.taskOf("agent", {}), null);
  assert.equal(dispatch.taskOf("agent", Object.create({ prompt: "inherited" })), null);
  assert.equal(dispatch.taskOf("__proto__", { prompt: "x" }), null);
});

Deno.test("dispatchToolsOf() reads every task field the clients name for one tool", () => {
  const a: WireHabits = {
    name: "a",
    agentHeaders: null,
    dispatchTools: [{ name: "spawn", taskField: "message" }],
  };
  const b: WireHabits = {
    name: "b",
    agentHeaders: null,
    dispatchTools: [{ name: "spawn", taskField: "task" }],
  };
  const dispatch = dispatchToolsOf([a, b]);
  assert.equal(dispatch.taskOf("spawn", { message: "m" }), "m");
  assert.equal(dispatch.taskOf("spawn", { task: "t" }), "t");
  assert.equal(dispatch.taskOf("spawn", { other: "o" }), null);
});

Deno.test("agentIdsOf() reads Codex's thread id only from a sub-agent's request, one naming its parent", () => {
  const root = "01a21a75-cddd-7bb2-9629-6c2533d848a7";
  const child = "01a21a75-944e-7ce1-bbd3-d54da3df21cf";
  // The root agent sends its own thread id too: it is no sub-agent.
  assert.deepEqual(
    agentIdsOf(new Headers({ "thread-id": root, "session-id": root }), AGENTS),
    { id: null, parentId: null },
  );
  assert.deepEqual(
    agentIdsOf(
      new Headers({ "thread-id": child, "session-id": root, "x-codex-parent-thread-id": root }),
      AGENTS,
    ),
    { id: child, parentId: root },
  );
});

Deno.test("dispatchToolsOf() knows Codex's spawn_agent by its message, or the text of its items", () => {
  const dispatch = dispatchToolsOf(AGENTS);
  assert.equal(dispatch.taskOf("spawn_agent", { message: "Run alpha." }), "Run alpha.");
  assert.equal(
    dispatch.taskOf("spawn_agent", {
      items: [{ type: "text", text: "Run" }, { type: "mention", path: "app://x" }, {
        type: "text",
        text: "alpha.",
      }],
    }),
    "Run\nalpha.",
  );
  assert.equal(dispatch.taskOf("spawn_agent", { items: [{ type: "skill", path: "x" }] }), null);
  assert.equal(dispatch.taskOf("wait_agent", { targets: ["a"] }), null);
});
