/**
 * The command harness: any command-line agent. Its shell command runs in the work tree with the
 * gateway's base URL, the session's token (and the model id, if it reads one) in the environment
 * variables it names, and the prompt in its command line (`{prompt}`) or in a file
 * (`{prompt_file}`). It says nothing about how it ended beyond its exit code.
 *
 * @module
 */
import { shellQuote } from "../evaluate/mod.ts";
import type { AgentConnection } from "./claude_code.ts";
import type { CommandSettings } from "./request.ts";

/** Where the harness writes the prompt, in the sandbox's temporary folder. */
export function promptFilePath(tmpdir: string): string {
  return `${tmpdir}/rollout-prompt.txt`;
}

/**
 * The agent's command with the prompt filled in, in one pass (a prompt that itself holds
 * `{prompt_file}` stays as written), each value shell-quoted.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { agentCommandLine } from "./command.ts";
 * import { type CommandSettings, RolloutRequestSchema } from "./request.ts";
 * const settings = RolloutRequestSchema.parse({
 *   task: { repo: "/r", base_commit: "abc1234", problem_statement: "Fix it", eval_cmd: "true" },
 *   agent: { harness: "command", command: "python3 agent.py --task {prompt}" },
 * }).agent as CommandSettings;
 * assert.equal(
 *   agentCommandLine(settings, "Fix it", "/tmp/rollout-prompt.txt"),
 *   "python3 agent.py --task 'Fix it'",
 * );
 * ```
 */
export function agentCommandLine(
  settings: CommandSettings,
  prompt: string,
  promptFile: string,
): string {
  return settings.command.replace(
    /\{prompt(_file)?\}/g,
    (_match, file) => shellQuote(file ? promptFile : prompt),
  );
}

/** The agent's environment: the base URL for its protocol, the token, the model if asked. */
export function commandEnv(
  settings: CommandSettings,
  connection: AgentConnection,
): Record<string, string> {
  const baseUrl = settings.protocol === "openai" ? `${connection.baseUrl}/v1` : connection.baseUrl;
  // Built from entries: the names come from the request, and are never keys of a literal.
  return Object.fromEntries([
    [settings.base_url_env, baseUrl],
    [settings.token_env, connection.token],
    ...(settings.model_env ? [[settings.model_env, settings.model ?? connection.model]] : []),
    ...Object.entries(settings.env),
  ]);
}
