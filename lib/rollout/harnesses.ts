/**
 * The registered agent harnesses of `/rollout`: a request's `agent.harness` names one, its
 * settings schema joins the request's, and the runner asks it how to install, run and read the
 * agent. A new harness is a file with its {@linkcode Harness} record and a line here.
 *
 * @module
 */
import type { RolloutConfig } from "../config/mod.ts";
import type { Sandbox } from "../sandbox/mod.ts";
import { CLAUDE_CODE } from "./claude_code.ts";
import { CODEX } from "./codex.ts";
import { COMMAND } from "./command.ts";
import {
  type AgentConnection,
  type AgentInstall,
  type AgentRun,
  type AnyHarness,
  resolveInstall,
  type SettingsOf,
} from "./harness.ts";
import { QWEN_CODE } from "./qwen_code.ts";
import type { AgentOutcome } from "./records.ts";

/** The agent CLIs a rollout runs in a sandbox, the default first. */
export const CLI_HARNESSES = [CLAUDE_CODE, QWEN_CODE, CODEX, COMMAND] as const;

/** The settings of an agent CLI run in a sandbox: any registered harness's. */
export type CliSettings = SettingsOf<(typeof CLI_HARNESSES)[number]>;
/** The agent CLIs `/rollout` runs in sandboxes. */
export type CliHarness = CliSettings["harness"];

/** Where each harness's CLI comes from, by harness name. */
export type AgentInstalls = ReadonlyMap<string, AgentInstall>;

/** The harness called `name`, or `undefined`. */
export function cliHarness(name: string): AnyHarness | undefined {
  return (CLI_HARNESSES as readonly AnyHarness[]).find((harness) => harness.name === name);
}

/** The harness `settings` are for (they were parsed by its schema, so it is registered). */
function harnessOf(settings: CliSettings): AnyHarness {
  const harness = cliHarness(settings.harness);
  if (harness === undefined) throw new TypeError(`No harness ${settings.harness}`);
  return harness;
}

/** The shell command that runs the agent headless with its prompt. */
export function agentCommand(settings: CliSettings, run: AgentRun): string {
  return harnessOf(settings).command(settings, run);
}

/**
 * Writes into `sandbox` the files the agent reads besides its command (Qwen Code's settings,
 * Codex's config.toml, a command's prompt file) and resolves to its environment: the gateway at
 * `connection`, over the protocol the CLI speaks.
 */
export function prepareAgent(
  sandbox: Sandbox,
  settings: CliSettings,
  connection: AgentConnection,
  prompt: string,
): Promise<Record<string, string>> {
  return harnessOf(settings).prepare(sandbox, settings, connection, prompt);
}

/** How the agent said it ended, from its output. */
export function readAgentOutcome(
  settings: CliSettings,
  stdout: string,
): Pick<AgentOutcome, "numTurns" | "result"> {
  return harnessOf(settings).outcome(stdout);
}

/** Where every registered harness's CLI comes from, resolved once at start-up. */
export async function agentInstalls(rollout: RolloutConfig): Promise<AgentInstalls> {
  const installs = new Map<string, AgentInstall>();
  for (const harness of CLI_HARNESSES as readonly AnyHarness[]) {
    installs.set(harness.name, await resolveInstall(harness, rollout));
  }
  return installs;
}
