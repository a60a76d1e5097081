/**
 * The body of `POST /rollout`: a task, how many jobs, and how to run them — the agent
 * harness and its settings, the sandbox, the time budgets and how the reward is shared. Every
 * field but `task` has a default.
 *
 * @module
 */
import { z } from "zod";
import {
  type HarborRef,
  HarborRefSchema,
  MAX_COMMAND_BYTES,
  shellQuote,
  TaskSchema,
} from "../evaluate/mod.ts";
import { checkMetadata, jsonBytes, MAX_METADATA_BYTES } from "../limits/mod.ts";
import { REWARD_ALLOCATIONS } from "../config/mod.ts";
import { EnvTaskSchema, isEnvTask } from "./env_task.ts";

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

/** Longest prompt template, in characters. */
export const MAX_PROMPT_TEMPLATE_CHARS = 16_384;
/** Longest tool pattern of `allowed_tools` / `disallowed_tools`, in characters. */
export const MAX_TOOL_PATTERN_CHARS = 256;
/**
 * Largest settings of a group (the request without its task), in characters of JSON. They are
 * kept in the group's one KV value (64 KiB), at most two bytes a character, beside up to 256 job
 * ids; the task is kept apart, in chunks.
 */
export const MAX_ROLLOUT_SETTINGS_CHARS = 24_576;
/** Bytes of session metadata a rollout adds (`group_id`, `sample_index`, `rollout_job`, `attempt`). */
const ROLLOUT_METADATA_BYTES = 256;

const ToolPattern = z.string().max(MAX_TOOL_PATTERN_CHARS).regex(/^[^,\s]+(?:\([^)]*\))?$/);

/** Settings every harness has. */
const COMMON = {
  /** The prompt; `{problem_statement}` and `{problem_file}` are filled in. */
  prompt_template: z.string().min(1).max(MAX_PROMPT_TEMPLATE_CHARS).default(DEFAULT_PROMPT),
  /** The model id the agent asks for; the gateway's `MODEL_ID` when unset. */
  model: z.string().regex(/^\S{1,256}$/).optional(),
  /** More environment variables for the agent. */
  env: z.record(z.string().regex(ENV_NAME), z.string().max(100_000)).default({}),
};

/** Claude Code, headless, speaking the Messages API. */
const ClaudeCodeSettings = z.strictObject({
  harness: z.literal("claude_code"),
  ...COMMON,
  /** Claude Code's `--max-turns`. */
  max_turns: z.number().int().min(1).max(100_000).optional(),
  /** Claude Code's `--permission-mode`. */
  permission_mode: z.enum(["bypassPermissions", "acceptEdits", "default", "plan"]).default(
    "bypassPermissions",
  ),
  /** Claude Code's `--allowedTools`. */
  allowed_tools: z.array(ToolPattern).max(200).optional(),
  /** Claude Code's `--disallowedTools`. */
  disallowed_tools: z.array(ToolPattern).max(200).default([]),
  /** `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (Claude Code's minimum is 100000). */
  auto_compact_window: z.number().int().min(100_000).max(10_000_000).optional(),
});

/**
 * Qwen Code's settings when a request gives none: no background memory or skill agents (each
 * an extra conversation that is not the task's, and files outside the work tree), no usage
 * statistics.
 */
export const DEFAULT_QWEN_SETTINGS: Readonly<Record<string, unknown>> = Object.freeze({
  memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false, enableAutoSkill: false },
  privacy: { usageStatisticsEnabled: false },
});

/** Qwen Code, headless, speaking Chat Completions. */
const QwenCodeSettings = z.strictObject({
  harness: z.literal("qwen_code"),
  ...COMMON,
  /** Qwen Code's `--max-session-turns`. */
  max_turns: z.number().int().min(1).max(100_000).optional(),
  /** Qwen Code's `--approval-mode`. */
  approval_mode: z.enum(["yolo", "auto-edit", "auto", "default", "plan"]).default("yolo"),
  /** Qwen Code's `--allowed-tools` (run without asking). */
  allowed_tools: z.array(ToolPattern).max(200).optional(),
  /** Qwen Code's `--exclude-tools`. */
  exclude_tools: z.array(ToolPattern).max(200).default([]),
  /** Qwen Code's `settings.json`, given as its system settings (they override the user's). */
  settings: z.record(z.string(), z.unknown()).default(() => structuredClone(DEFAULT_QWEN_SETTINGS)),
});

/** A TOML value of a `-c key=value` override: a string, a number or a boolean. */
const TomlScalar = z.union([z.string().max(4096), z.number().finite(), z.boolean()]);

/** Codex, headless (`codex exec`), speaking the Responses API. */
const CodexSettings = z.strictObject({
  harness: z.literal("codex"),
  ...COMMON,
  /**
   * More config.toml settings, each given as `-c key=value` (dotted keys reach into tables:
   * `model_reasoning_effort`, `model_providers.gateway.stream_idle_timeout_ms`).
   */
  config: z.record(z.string().regex(/^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/).max(256), TomlScalar)
    .default({}),
});

/**
 * Any command-line agent: a shell command run in the work tree with the gateway's base URL and the
 * session's token in the environment variables it reads, and the prompt as an argument or a file.
 */
const CommandSettings = z.strictObject({
  harness: z.literal("command"),
  ...COMMON,
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

/** Longest system prompt of an environment loop, in characters. */
export const MAX_SYSTEM_PROMPT_CHARS = 200_000;

/**
 * The environment loop: no CLI, the gateway itself runs the model against a tool environment
 * over HTTP (`lib/rollout/env_loop.ts`), one Chat Completions turn per step.
 */
const EnvLoopSettings = z.strictObject({
  harness: z.literal("env_loop"),
  /** The model id the loop asks for; the gateway's `MODEL_ID` when unset. */
  model: z.string().regex(/^\S{1,256}$/).optional(),
  /** Environment steps (tool calls and replies to the user) before the episode is TRUNCATED. */
  max_steps: z.number().int().min(1).max(1000).default(30),
  /** The system prompt; the environment's `wiki` when unset. */
  system_prompt: z.string().max(MAX_SYSTEM_PROMPT_CHARS).optional(),
  /** The tools (Chat Completions function tools); the environment's `tools` when unset. */
  tools: z.array(z.record(z.string(), z.unknown())).max(128).optional(),
  /** Sampling of each turn. */
  sampling: z.strictObject({
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().gt(0).max(1).optional(),
    max_tokens: z.number().int().min(1).max(1_000_000).optional(),
  }).default({}),
  /**
   * Who answers the `respond` action: the environment's own user (`env`, tau-bench's design), or
   * the environment's user simulator talking to a model through this gateway (`model`): its
   * reset is given a base URL and a token of a session of its own.
   */
  user: z.enum(["env", "model"]).default("env"),
  /** The model id the user simulator asks for; the loop's model when unset. */
  user_model: z.string().regex(/^\S{1,256}$/).optional(),
  /** Longest one environment call may take, in milliseconds. */
  env_timeout_ms: z.number().int().min(100).max(3_600_000).default(60_000),
});

/** How the agent runs: `harness` picks the CLI (Claude Code when unset) and its settings. */
const AgentSettings = z.preprocess(
  (value) =>
    value !== null && typeof value === "object" && !Array.isArray(value) &&
      !Object.hasOwn(value, "harness")
      ? { ...value, harness: "claude_code" }
      : value,
  z.discriminatedUnion("harness", [
    ClaudeCodeSettings,
    QwenCodeSettings,
    CodexSettings,
    CommandSettings,
    EnvLoopSettings,
  ]),
);

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
  /** An agent still running at `agent_ms`: the job is aborted, or its patch so far graded. */
  on_agent_timeout: z.enum(["abort", "evaluate"]).default("abort"),
});

/**
 * The task of a rollout, told apart by its keys: a tool environment (`environment`, for the
 * `env_loop` harness), a Harbor task directory (`harbor`, resolved into a repository task before
 * the group is stored), or a repository task (`/evaluate`'s).
 */
const RolloutTaskSchema = z.record(z.string(), z.unknown()).transform((value, ctx) => {
  const parsed = isEnvTask(value)
    ? EnvTaskSchema.safeParse(value)
    : Object.hasOwn(value, "harbor")
    ? HarborRefSchema.safeParse(value)
    : TaskSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    ctx.addIssue({ ...issue } as Parameters<typeof ctx.addIssue>[0]);
  }
  return z.NEVER;
});

/** The `POST /rollout` body. */
export const RolloutRequestSchema = z.object({
  task: RolloutTaskSchema,
  /** Jobs in the group: runs of the task, each with its own session. */
  n: z.number().int().min(1).max(256).default(1),
  agent: AgentSettings.prefault({}),
  sandbox: SandboxSettings.prefault({}),
  budgets: Budgets.prefault({}),
  /** How each session's reward is shared among its segments; `REWARD_ALLOCATION` when unset. */
  reward_allocation: z.enum(REWARD_ALLOCATIONS).optional(),
  /** The old name of `reward_allocation`, still read. */
  reward_mode: z.enum(REWARD_ALLOCATIONS).optional(),
  /** Attempts per job when a gateway process dies while running it. */
  max_attempts: z.number().int().min(1).max(10).default(2),
  /** Labels kept on each job's session (`group_id`, `sample_index` are added). */
  metadata: z.record(z.string(), z.unknown()).default({}),
  /** Each job's session keeps its turns' request messages (`POST /sessions`' option). */
  record_messages: z.boolean().default(false),
}).superRefine((request, ctx) => {
  const { task, ...settings } = request;
  const issue = (path: PropertyKey[], message: string) =>
    ctx.addIssue({ code: "custom", path, message });
  const { reward_allocation: allocation, reward_mode: oldName } = request;
  if (allocation && oldName && allocation !== oldName) {
    issue(["reward_mode"], "the old name of reward_allocation, which says otherwise");
  }
  const metadataBytes = jsonBytes(request.metadata);
  if (metadataBytes > MAX_METADATA_BYTES - ROLLOUT_METADATA_BYTES) {
    issue(
      ["metadata"],
      `${metadataBytes} bytes of JSON, at most ${MAX_METADATA_BYTES - ROLLOUT_METADATA_BYTES} ` +
        "(each job's session adds its group, index, job and attempt)",
    );
  } else {
    try {
      checkMetadata(request.metadata); // the length of its keys
    } catch (error) {
      issue([], (error as Error).message);
    }
  }
  const chars = JSON.stringify(settings).length;
  if (chars > MAX_ROLLOUT_SETTINGS_CHARS) {
    issue(
      [largestPart(settings)],
      `the settings besides the task take ${chars} characters of JSON, ` +
        `at most ${MAX_ROLLOUT_SETTINGS_CHARS}`,
    );
  }
  const loop = request.agent.harness === "env_loop";
  if (loop !== isEnvTask(task)) {
    issue(
      ["task"],
      loop
        ? "the env_loop harness runs a tool environment: give task.environment and task.task_index"
        : `the ${request.agent.harness} harness works on a repository: task.environment is for env_loop`,
    );
    return;
  }
  // A Harbor task's prompt is checked once resolved, when the body is validated again with it.
  if (request.agent.harness === "env_loop" || isEnvTask(task) || "harbor" in task) return;
  const command = agentCommandBytes(request.agent, task.problem_statement);
  if (command > MAX_COMMAND_BYTES) {
    issue(
      ["agent", "prompt_template"],
      `the agent's command, with task.problem_statement filled in, takes ${command} bytes, ` +
        `at most ${MAX_COMMAND_BYTES}`,
    );
  }
});

/** The top-level field of `settings` that takes the most JSON. */
function largestPart(settings: Record<string, unknown>): string {
  const sizes = Object.entries(settings).map(([key, value]) => [key, jsonBytes(value)] as const);
  return sizes.reduce((a, b) => b[1] > a[1] ? b : a)[0];
}

/**
 * An upper bound on the bytes of the agent's shell command (its prompt and tool lists quoted):
 * one argument of `sh -c`, like the evaluation's commands.
 */
function agentCommandBytes(agent: CliSettings, problem: string): number {
  const bytes = (text: string) => new TextEncoder().encode(text).length;
  const template = agent.prompt_template;
  const fills = template.split("{problem_statement}").length - 1;
  // A command harness may pass the prompt more than once (or only as a file: then once, counted
  // as the command's own share of the limit).
  const copies = agent.harness === "command"
    ? Math.max(1, agent.command.split("{prompt}").length - 1)
    : 1;
  // Counted before the prompt is built, so a template repeating a long statement builds nothing.
  const estimate = copies * (bytes(template) + fills * bytes(problem));
  if (estimate > MAX_COMMAND_BYTES) return estimate;
  const prompt = template.replaceAll("{problem_statement}", problem)
    .replaceAll("{problem_file}", PROBLEM_FILE);
  const lists = agent.harness === "claude_code"
    ? [agent.allowed_tools ?? [], agent.disallowed_tools]
    : agent.harness === "qwen_code"
    ? [agent.allowed_tools ?? [], agent.exclude_tools]
    : agent.harness === "codex"
    ? [Object.entries(agent.config).map(([key, value]) => `${key}=${JSON.stringify(value)}`)]
    : [[agent.command]];
  const extra = lists.map((list) => list.join(","));
  return copies * (bytes(shellQuote(prompt)) + 1) +
    extra.reduce((sum, text) => sum + bytes(shellQuote(text)) + 1, 0) + 512;
}

/** A validated `POST /rollout` body. */
export type RolloutRequest = z.output<typeof RolloutRequestSchema>;

/** The settings of a group, kept with it: the request without the task. */
export type RolloutSettings = Omit<RolloutRequest, "task">;

/** The task of a stored rollout group: a repository task, or a tool environment's. */
export type RolloutTask = Exclude<RolloutRequest["task"], HarborRef>;

/** The agent's settings. */
export type AgentSettings = RolloutRequest["agent"];
/** The settings of an agent CLI run in a sandbox: every harness but the environment loop. */
export type CliSettings = Exclude<AgentSettings, { harness: "env_loop" }>;
/** The environment loop's settings. */
export type EnvLoopSettings = Extract<AgentSettings, { harness: "env_loop" }>;
/** Claude Code's settings. */
export type ClaudeCodeSettings = Extract<AgentSettings, { harness: "claude_code" }>;
/** Qwen Code's settings. */
export type QwenCodeSettings = Extract<AgentSettings, { harness: "qwen_code" }>;
/** Codex's settings. */
export type CodexSettings = Extract<AgentSettings, { harness: "codex" }>;
/** A command-line agent's settings. */
export type CommandSettings = Extract<AgentSettings, { harness: "command" }>;
/** The harnesses of `/rollout`. */
export type HarnessName = AgentSettings["harness"];
/** The agent CLIs `/rollout` runs in sandboxes. */
export type CliHarness = CliSettings["harness"];
