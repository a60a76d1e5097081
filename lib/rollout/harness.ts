/**
 * Running an agent's harness in an attempt: the record the settings name (`lib/agents`), its
 * prompt filled from the task, its command, the files it reads and its environment, and how it
 * said it ended. The agents are listed in `lib/agents/agents.ts`, not here.
 *
 * @module
 */
import {
  type AgentConnection,
  type AgentEnd,
  agentNamed,
  type AgentRun,
  type AnyAgent,
  type CliSettings,
  PROBLEM_FILE,
} from "../agents/mod.ts";
import type { Task } from "../evaluate/mod.ts";
import type { Sandbox } from "../sandbox/mod.ts";

/** The prompt: the template with the task's problem statement filled in. */
export function fillPrompt(template: string, task: Task): string {
  return template.replaceAll("{problem_statement}", task.problem_statement)
    .replaceAll("{problem_file}", PROBLEM_FILE);
}

/** The agent `settings` are for (they were parsed by its schema, so it is listed). */
function agentOf(settings: CliSettings): AnyAgent {
  const agent = agentNamed(settings.harness);
  if (agent === undefined) throw new TypeError(`No harness ${settings.harness}`);
  return agent;
}

/** The shell command that runs the agent headless with its prompt. */
export function agentCommand(settings: CliSettings, run: AgentRun): string {
  return agentOf(settings).command(settings, run);
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
  return agentOf(settings).prepare(sandbox, settings, connection, prompt);
}

/** How the agent said it ended, from its output. */
export function readAgentOutcome(settings: CliSettings, stdout: string): AgentEnd {
  return agentOf(settings).outcome(stdout);
}
