/**
 * The agents the gateway knows, listed once: routing reads their wire habits, `/rollout` runs
 * their harnesses, `tools/setup.ts` installs their CLIs and the configuration generates their
 * install variables, all from this list. A new agent is a file with its record and a line here.
 *
 * @module
 */
import type { AnyAgent, SettingsOf } from "./agent.ts";
import { CLAUDE_CODE } from "./claude_code.ts";
import { CODEX } from "./codex.ts";
import { COMMAND } from "./command.ts";
import {
  type AgentInstall,
  type AgentInstallSettings,
  configuredFile,
  installVariables,
  pinnedSpec,
} from "./install.ts";
import { QWEN_CODE } from "./qwen_code.ts";

/**
 * Every agent, the default harness of `/rollout` first, in the order their sub-agent headers are
 * read.
 */
export const AGENTS = [CLAUDE_CODE, QWEN_CODE, CODEX, COMMAND] as const;

/** The settings of an agent run in a sandbox: any listed agent's. */
export type CliSettings = SettingsOf<(typeof AGENTS)[number]>;
/** The name of a listed agent: an `agent.harness` of `/rollout` that runs in a sandbox. */
export type AgentName = CliSettings["harness"];

/** Where each agent's CLI comes from, by agent name. */
export type AgentInstalls = ReadonlyMap<string, AgentInstall>;

/**
 * The listed agent called `name`, or `undefined`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { agentNamed, CODEX } from "./mod.ts";
 * assert.equal(agentNamed("codex"), CODEX);
 * assert.equal(agentNamed("env_loop"), undefined);
 * ```
 */
export function agentNamed(name: string): AnyAgent | undefined {
  return (AGENTS as readonly AnyAgent[]).find((agent) => agent.name === name);
}

/**
 * Where `agent`'s CLI comes from, by its install variables (`configured`, absent for an agent
 * without a CLI package): the host's install (lent to local sandboxes; a default one may be
 * missing, and the agent then answers `agent_unavailable` there) and what E2B sandboxes install
 * (the configured spec, else the pinned one; a configured tarball must exist).
 *
 * @throws {ConfigError} naming the variable whose path is wrong.
 */
export async function resolveInstall(
  agent: AnyAgent,
  configured: AgentInstallSettings | undefined,
): Promise<AgentInstall> {
  if (agent.package === undefined) return { local: await agent.findLocal(), npm: null };
  if (configured === undefined) throw new TypeError(`No install settings for ${agent.name}`);
  const local = await agent.findLocal(configured);
  const tarball = await configuredFile(installVariables(agent.install).tarball, configured.tarball);
  return {
    local,
    npm: {
      package: configured.package ?? await pinnedSpec(agent.package),
      tarball,
      bin: agent.package.bin,
      ...(agent.package.unpack === undefined ? {} : { unpack: agent.package.unpack }),
    },
  };
}

/**
 * Where every listed agent's CLI comes from, resolved once at start-up from the configuration's
 * install settings by agent name (`Config["rollout"]["agents"]`).
 *
 * @throws {ConfigError} naming the first variable whose path is wrong.
 */
export async function agentInstalls(
  configured: ReadonlyMap<string, AgentInstallSettings>,
): Promise<AgentInstalls> {
  const installs = new Map<string, AgentInstall>();
  for (const agent of AGENTS as readonly AnyAgent[]) {
    installs.set(agent.name, await resolveInstall(agent, configured.get(agent.name)));
  }
  return installs;
}
