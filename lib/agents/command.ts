/**
 * The command: any command-line agent. Its shell command runs in the work tree with the
 * gateway's base URL, the session's token (and the model id, if it reads one) in the environment
 * variables it names, and the prompt in its command line (`{prompt}`) or in a file
 * (`{prompt_file}`). It says nothing about how it ended beyond its exit code, and the gateway
 * knows none of its habits on the wire (no sub-agent headers, no dispatch tools).
 *
 * @module
 */
import { z } from "zod";
import { shellQuote } from "../shell/mod.ts";
import type { AgentConnection, OwnProgramAgent } from "./agent.ts";
import { COMMON_SETTINGS, ENV_NAME, MAX_PROMPT_TEMPLATE_CHARS } from "./common_settings.ts";

/**
 * Any command-line agent: a shell command run in the work tree with the gateway's base URL and the
 * session's token in the environment variables it reads, and the prompt as an argument or a file.
 */
export const CommandSettingsSchema = z.strictObject({
  harness: z.literal("command"),
  ...COMMON_SETTINGS,
  /**
   * The shell command; `{prompt}` is replaced by the prompt (shell-quoted) and `{prompt_file}`
   * by the path of a file holding it (quoted too).
   */
  command: z.string().min(1).max(MAX_PROMPT_TEMPLATE_CHARS).refine(
    (command) => command.includes("{prompt}") || command.includes("{prompt_file}"),
    "must pass the prompt: write {prompt} or {prompt_file} in it",
  ),
  /** The protocol it speaks: `openai` gets the base URL with `/v1`, `anthropic` without. */
  protocol: z.enum(["openai", "anthropic"]).default("openai"),
  /** The variable that holds the base URL. */
  base_url_env: z.string().regex(ENV_NAME).max(128).default("OPENAI_BASE_URL"),
  /** The variable that holds the session's token. */
  token_env: z.string().regex(ENV_NAME).max(128).default("OPENAI_API_KEY"),
  /** The variable that holds the model id, if it reads one. */
  model_env: z.string().regex(ENV_NAME).max(128).optional(),
});

/** A command-line agent's settings. */
export type CommandSettings = z.output<typeof CommandSettingsSchema>;

/** The command (`command`): it brings its own program, so nothing is lent or installed. */
export const COMMAND: OwnProgramAgent<CommandSettings> = {
  name: "command",
  title: "The command",
  agentHeaders: null,
  dispatchTools: [],
  settings: CommandSettingsSchema,
  installHint: "it brings its own program",
  findLocal: () => Promise.resolve({ binds: [], program: "" }),
  command: (settings, run) => agentCommandLine(settings, run.prompt, promptFilePath(run.tmpdir)),
  async prepare(sandbox, settings, connection, prompt) {
    await sandbox.writeFile(promptFilePath(sandbox.tmpdir), prompt);
    return commandEnv(settings, connection);
  },
  outcome: () => ({ numTurns: null, result: null }),
  commandWords: (settings) => [settings.command],
  // The prompt may be passed more than once (or only as a file: then counted once, as the
  // command's own share of the limit).
  promptCopies: (settings) => Math.max(1, settings.command.split("{prompt}").length - 1),
};

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
 * import { agentCommandLine, CommandSettingsSchema } from "./command.ts";
 * const settings = CommandSettingsSchema.parse({
 *   harness: "command",
 *   command: "python3 agent.py --task {prompt}",
 * });
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
