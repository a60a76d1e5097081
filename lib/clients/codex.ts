/**
 * Codex (`@openai/codex`): with `[agents]` on, its sub-agent tools (`spawn_agent`, whose
 * `message` is the task, and `send_input`, `wait_agent`…) come inside a `namespace` tool
 * (`multi_agent_v1`), which the Responses adapter does not show the model, so no call of the
 * served model can start one yet; its descriptor names no dispatch tool until namespaced tools
 * are served. Its requests carry `session-id` and `thread-id` headers, equal for the root agent.
 *
 * @module
 */
import type { AgentClient } from "./agent_client.ts";

/** Codex's descriptor. */
export const CODEX: AgentClient = {
  name: "codex",
  agentHeaders: null,
  dispatchTools: [],
};
