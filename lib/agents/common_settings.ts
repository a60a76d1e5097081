/**
 * The settings every agent's schema has (the prompt, the model, more environment), and the
 * pieces the agents' own settings are built from.
 *
 * @module
 */
import { z } from "zod";

/** Where the agent finds the issue, in its work tree; left out of the patch. */
export const PROBLEM_FILE = "PROBLEM_STATEMENT.md";

/** The prompt of a task that gives none: `{problem_statement}` is filled from the task. */
export const DEFAULT_PROMPT = [
  "Resolve the following issue in the repository in the current directory.",
  "",
  "{problem_statement}",
  "",
  `(The issue is also in ${PROBLEM_FILE}.) Make the change in the working tree; do not commit it.`,
].join("\n");

/** An environment variable's name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Longest prompt template, in characters. */
export const MAX_PROMPT_TEMPLATE_CHARS = 16_384;
/** Longest tool pattern of `allowed_tools` / `disallowed_tools`, in characters. */
export const MAX_TOOL_PATTERN_CHARS = 256;

/** One tool pattern of a CLI's allow or deny list (`Bash`, `Bash(git:*)`). */
export const ToolPattern = z.string().max(MAX_TOOL_PATTERN_CHARS).regex(
  /^[^,\s]+(?:\([^)]*\))?$/,
);

/** Settings every agent has; an agent's schema spreads them beside its own. */
export const COMMON_SETTINGS = {
  /** The prompt; `{problem_statement}` and `{problem_file}` are filled in. */
  prompt_template: z.string().min(1).max(MAX_PROMPT_TEMPLATE_CHARS).default(DEFAULT_PROMPT),
  /** The model id the agent asks for; the gateway's `MODEL_ID` when unset. */
  model: z.string().regex(/^\S{1,256}$/).optional(),
  /** More environment variables for the agent. */
  env: z.record(z.string().regex(ENV_NAME), z.string().max(100_000)).default({}),
};

/** The settings every agent's parsed settings have. */
export interface HarnessSettingsBase {
  /** The agent the settings are for: the `agent.harness` of a request. */
  readonly harness: string;
  readonly prompt_template: string;
  readonly model?: string;
  readonly env: Readonly<Record<string, string>>;
}
