/**
 * Agent settings as a `/rollout` request gives them, parsed by the agent's own schema with every
 * default filled.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type AgentName, agentNamed, type CliSettings } from "../../lib/agents/mod.ts";

/** `settings` for the agent `harness`, parsed. */
export function agentSettings<H extends AgentName>(
  harness: H,
  settings: Record<string, unknown> = {},
): Extract<CliSettings, { harness: H }> {
  const agent = agentNamed(harness);
  assert.ok(agent !== undefined, harness);
  const parsed = agent.settings.parse({ harness, ...settings });
  assert.equal(parsed.harness, harness);
  return parsed as Extract<CliSettings, { harness: H }>;
}
