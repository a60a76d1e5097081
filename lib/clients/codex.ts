/**
 * Codex (`@openai/codex`): with `[agents]` on, it offers its sub-agent tools in a `namespace`
 * tool (`multi_agent_v1`, shown to the model by their plain names): `spawn_agent`, whose
 * `message` (or the text of its `items`) is the sub-agent's task, then `wait_agent`,
 * `send_input`, `close_agent`. A sub-agent's requests carry its own thread id in `thread-id` and
 * its parent's in `x-codex-parent-thread-id`; the root agent sends its thread id in `thread-id`
 * too, with no parent, so only a request naming a parent names a sub-agent. A sub-agent has the
 * root's system prompt: without its thread id it would look like the root's own new conversation.
 *
 * @module
 */
import type { AgentClient } from "./agent_client.ts";

/** Codex's descriptor. */
export const CODEX: AgentClient = {
  name: "codex",
  agentHeaders: { id: "thread-id", parentId: "x-codex-parent-thread-id", onlyWithParent: true },
  dispatchTools: [
    { name: "spawn_agent", taskField: "message" },
    { name: "spawn_agent", taskField: "items" },
  ],
};
