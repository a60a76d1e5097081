/**
 * The body of `POST /rollout`: a task, how many samples, and how to run them — the agent
 * harness and its settings, the sandbox, the time budgets and how the reward is shared. Every
 * field but `task` has a default.
 *
 * @module
 */
import { z } from "zod";
import { TaskSchema } from "../evaluate/mod.ts";

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

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** How the agent runs. */
const AgentSettings = z.strictObject({
  /** The agent: Claude Code, headless. */
  harness: z.enum(["claude_code"]).default("claude_code"),
  /** The prompt; `{problem_statement}` and `{problem_file}` are filled in. */
  prompt_template: z.string().min(1).max(1_000_000).default(DEFAULT_PROMPT),
  /** Claude Code's `--permission-mode`. */
  permission_mode: z.enum(["bypassPermissions", "acceptEdits", "default", "plan"]).default(
    "bypassPermissions",
  ),
  /** Claude Code's `--allowedTools`. */
  allowed_tools: z.array(z.string().regex(/^[^,\s]+(?:\([^)]*\))?$/)).max(200).optional(),
  /** Claude Code's `--disallowedTools`. */
  disallowed_tools: z.array(z.string().regex(/^[^,\s]+(?:\([^)]*\))?$/)).max(200).default([]),
  /** `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (Claude Code's minimum is 100000). */
  auto_compact_window: z.number().int().min(100_000).max(10_000_000).optional(),
  /** Claude Code's `--max-turns`. */
  max_turns: z.number().int().min(1).max(100_000).optional(),
  /** The model id the agent asks for (`ANTHROPIC_MODEL`); the gateway's `MODEL_ID` when unset. */
  model: z.string().regex(/^\S{1,256}$/).optional(),
  /** More environment variables for the agent. */
  env: z.record(z.string().regex(ENV_NAME), z.string().max(100_000)).default({}),
});

const SandboxSettings = z.strictObject({
  /** `local` or `e2b`; the gateway's `SANDBOX_BACKEND` when unset. */
  backend: z.enum(["local", "e2b"]).optional(),
  /** E2B template of the agent's sandbox; the task's `template` when unset. */
  template: z.string().min(1).max(256).optional(),
});

const Budgets = z.strictObject({
  /** The agent's time, in milliseconds. */
  agent_ms: z.number().int().min(1000).max(7 * 86_400_000).default(30 * 60_000),
  /** The evaluation's time; the task's `timeout_ms` (or `EVAL_TIMEOUT_MS`) when unset. */
  eval_ms: z.number().int().min(100).max(86_400_000).optional(),
  /** Slack on top of both for booting, collecting and recording. */
  margin_ms: z.number().int().min(0).max(86_400_000).default(120_000),
  /** An agent still running at `agent_ms`: the sample is aborted, or its patch so far graded. */
  on_agent_timeout: z.enum(["abort", "evaluate"]).default("abort"),
});

/** The `POST /rollout` body. */
export const RolloutRequestSchema = z.object({
  task: TaskSchema,
  /** Samples in the group. */
  n: z.number().int().min(1).max(256).default(1),
  agent: AgentSettings.prefault({}),
  sandbox: SandboxSettings.prefault({}),
  budgets: Budgets.prefault({}),
  /** How each session's reward is shared among its segments; `REWARD_ALLOCATION` when unset. */
  reward_mode: z.enum(["uniform", "copy", "final_only"]).optional(),
  /** Attempts per sample when a gateway process dies while running it. */
  max_attempts: z.number().int().min(1).max(10).default(2),
  /** Labels kept on each sample's session (`group_id`, `sample_index` are added). */
  metadata: z.record(z.string(), z.unknown()).default({}),
});

/** A validated `POST /rollout` body. */
export type RolloutRequest = z.output<typeof RolloutRequestSchema>;

/** The settings of a group, kept with it: the request without the task. */
export type RolloutSettings = Omit<RolloutRequest, "task">;

/** The agent's settings. */
export type AgentSettings = RolloutRequest["agent"];
