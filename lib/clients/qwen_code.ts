/**
 * Qwen Code (`@qwen-code/qwen-code`): it sends no header naming a sub-agent; its `agent` tool
 * starts one, whose first user message quotes the call's `prompt` after the skills reminder.
 * Its background helpers (the memory extractor, the skill reviewer) are forked agents with
 * system prompts and tools of their own, which routing treats as helpers (docs/DESIGN.md §4.1).
 *
 * @module
 */
import type { AgentClient } from "./agent_client.ts";

/** Qwen Code's descriptor. */
export const QWEN_CODE: AgentClient = {
  name: "qwen_code",
  agentHeaders: null,
  dispatchTools: [{ name: "agent", taskField: "prompt" }],
};
