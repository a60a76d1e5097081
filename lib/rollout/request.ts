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
  MAX_SOLUTION_PATCH_BYTES,
  TaskSchema,
} from "../evaluate/mod.ts";
import { shellQuote } from "../shell/mod.ts";
import { checkMetadata, jsonBytes, MAX_METADATA_BYTES } from "../limits/mod.ts";
import { REWARD_ALLOCATIONS } from "../config/mod.ts";
import { SANDBOX_BACKEND_KINDS } from "../sandbox/mod.ts";
import { MAX_SYSTEM_PROMPT_CHARS } from "./env_client.ts";
import { EnvTaskSchema, isEnvTask } from "./env_task.ts";
import { AGENTS, type AnyAgent, type CliSettings, PROBLEM_FILE } from "../agents/mod.ts";

/**
 * Largest settings of a group (the request without its task), in characters of JSON. They are
 * kept in the group's one KV value (64 KiB), at most two bytes a character, beside up to 256 job
 * ids; the task is kept apart, in chunks.
 */
export const MAX_ROLLOUT_SETTINGS_CHARS = 24_576;
/** Bytes of session metadata a rollout adds (`group_id`, `sample_index`, `rollout_job`, `attempt`). */
const ROLLOUT_METADATA_BYTES = 256;

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

/**
 * How the agent runs: `harness` picks one of `harnesses` (the first when unset) or the
 * environment loop, and its settings (an unknown harness is refused, the known ones named).
 */
function agentSettingsSchema(harnesses: readonly AnyAgent[]) {
  return z.preprocess(
    (value) =>
      value !== null && typeof value === "object" && !Array.isArray(value) &&
        !Object.hasOwn(value, "harness")
        ? { ...value, harness: harnesses[0].name }
        : value,
    z.discriminatedUnion(
      "harness",
      // Each harness's schema is a strict object with its `harness` literal.
      [...harnesses.map((harness) => harness.settings), EnvLoopSettings] as unknown as [
        typeof EnvLoopSettings,
        ...(typeof EnvLoopSettings)[],
      ],
    ),
  ) as unknown as z.ZodType<CliSettings | EnvLoopSettings, unknown>;
}

const SandboxSettings = z.strictObject({
  /** A registered backend (`local`, `e2b`); the gateway's `SANDBOX_BACKEND` when unset. */
  backend: z.enum(SANDBOX_BACKEND_KINDS.map((kind) => kind.name) as [string, ...string[]])
    .optional(),
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
  /** A sandbox boot that has not finished by then is killed, and tried again. */
  boot_ms: z.number().int().min(100).max(86_400_000).default(600_000),
  /** The whole job's wall-clock from its submission, retries included: no retry starts past it. */
  job_ms: z.number().int().min(1000).max(30 * 86_400_000).optional(),
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

/**
 * The `POST /rollout` body with `harnesses` as its agent CLIs (the listed agents, `AGENTS`: the
 * gateway's is {@linkcode RolloutRequestSchema}).
 */
export function rolloutRequestSchema(harnesses: readonly AnyAgent[] = AGENTS) {
  const byName = new Map(harnesses.map((harness) => [harness.name as string, harness]));
  return z.strictObject({
    task: RolloutTaskSchema,
    /** Jobs in the group: runs of the task, each with its own session. */
    n: z.number().int().min(1).max(256).default(1),
    agent: agentSettingsSchema(harnesses).prefault({}),
    sandbox: SandboxSettings.prefault({}),
    budgets: Budgets.prefault({}),
    /** How each session's reward is shared among its segments; `REWARD_ALLOCATION` when unset. */
    reward_allocation: z.enum(REWARD_ALLOCATIONS).optional(),
    /** The old name of `reward_allocation`, still read. */
    reward_mode: z.enum(REWARD_ALLOCATIONS).optional(),
    /**
     * Attempts per job: a fresh one after a failure of the infrastructure (docs/rollouts.md's
     * outcome table), within the group's `retry_budget`.
     */
    max_attempts: z.number().int().min(1).max(10).default(3),
    /** Retries the whole group may spend, so a broken backend does not multiply load; `n` unset. */
    retry_budget: z.number().int().min(0).max(2560).optional(),
    /** The first retry's wait, doubled for each later one (up to a minute), with jitter. */
    retry_backoff_ms: z.number().int().min(0).max(600_000).default(1000),
    /** Labels kept on each job's session (`group_id`, `sample_index` are added). */
    metadata: z.record(z.string(), z.unknown()).default({}),
    /** Each job's session keeps its turns' request messages (`POST /sessions`' option). */
    record_messages: z.boolean().default(false),
    /**
     * Validate the task before anything is queued (`POST /evaluate/validate`; a kept verdict is
     * used): `true`, or with the task's gold patch. An invalid task is refused (422).
     */
    validate: z.union([
      z.boolean(),
      z.strictObject({ gold_patch: z.string().min(1).max(MAX_SOLUTION_PATCH_BYTES) }),
    ]).optional(),
  }).superRefine((request, ctx) => {
    const { task, validate: _validate, ...settings } = request;
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
    if (request.validate && isEnvTask(task)) {
      issue(["validate"], "a tool environment's task has no tests to validate");
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
    const harness = byName.get(request.agent.harness)!;
    const command = agentCommandBytes(harness, request.agent, task.problem_statement);
    if (command > MAX_COMMAND_BYTES) {
      issue(
        ["agent", "prompt_template"],
        `the agent's command, with task.problem_statement filled in, takes ${command} bytes, ` +
          `at most ${MAX_COMMAND_BYTES}`,
      );
    }
  });
}

/** The `POST /rollout` body. */
export const RolloutRequestSchema = rolloutRequestSchema();

/** The top-level field of `settings` that takes the most JSON. */
function largestPart(settings: Record<string, unknown>): string {
  const sizes = Object.entries(settings).map(([key, value]) => [key, jsonBytes(value)] as const);
  return sizes.reduce((a, b) => b[1] > a[1] ? b : a)[0];
}

/**
 * An upper bound on the bytes of the agent's shell command (its prompt and tool lists quoted):
 * one argument of `sh -c`, like the evaluation's commands.
 */
function agentCommandBytes(harness: AnyAgent, agent: CliSettings, problem: string): number {
  const bytes = (text: string) => new TextEncoder().encode(text).length;
  const template = agent.prompt_template;
  const fills = template.split("{problem_statement}").length - 1;
  const copies = harness.promptCopies?.(agent) ?? 1;
  // Counted before the prompt is built, so a template repeating a long statement builds nothing.
  const estimate = copies * (bytes(template) + fills * bytes(problem));
  if (estimate > MAX_COMMAND_BYTES) return estimate;
  const prompt = template.replaceAll("{problem_statement}", problem)
    .replaceAll("{problem_file}", PROBLEM_FILE);
  return copies * (bytes(shellQuote(prompt)) + 1) +
    harness.commandWords(agent).reduce((sum, word) => sum + bytes(shellQuote(word)) + 1, 0) +
    512;
}

/** A validated `POST /rollout` body. */
export type RolloutRequest = z.output<typeof RolloutRequestSchema>;

/** The settings of a group, kept with it: the request without the task. */
export type RolloutSettings = Omit<RolloutRequest, "task">;

/** The task of a stored rollout group: a repository task, or a tool environment's. */
export type RolloutTask = Exclude<RolloutRequest["task"], HarborRef>;

/** The agent's settings. */
export type AgentSettings = RolloutRequest["agent"];
/** The environment loop's settings. */
export type EnvLoopSettings = z.output<typeof EnvLoopSettings>;
/** The harnesses of `/rollout`. */
export type HarnessName = AgentSettings["harness"];
