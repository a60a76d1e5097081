/**
 * Claude Code (`@anthropic-ai/claude-code`): it names each sub-agent's requests with
 * `x-claude-code-agent-id` (and a nested one's parent with `x-claude-code-parent-agent-id`), and
 * starts sub-agents with its `Agent` tool (`Task` in earlier versions), whose `prompt` is the
 * sub-agent's task.
 *
 * @module
 */
import type { AgentClient } from "./agent_client.ts";

/** Claude Code's descriptor. */
export const CLAUDE_CODE: AgentClient = {
  name: "claude_code",
  agentHeaders: { id: "x-claude-code-agent-id", parentId: "x-claude-code-parent-agent-id" },
  dispatchTools: [
    { name: "Agent", taskField: "prompt" },
    { name: "Task", taskField: "prompt" },
  ],
};
