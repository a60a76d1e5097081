/**
 * A tool environment over HTTP, as the environment loop drives it (tau-bench's `Env`, served):
 *
 * - `POST {env}/reset {task_index, episode_id, user_model?}` → `{observation, info?, tools?, wiki?}`
 * - `POST {env}/step {episode_id, action: {name, kwargs}}` → `{observation, reward, done, info?}`
 *
 * `episode_id` lets one environment serve many episodes at once. `user_model`, when given, is a
 * Chat Completions endpoint on the gateway (base URL, token, model id) for the environment's user
 * simulator. Every answer is read to a bound and checked before the loop sees it: an environment
 * is a peer like any client.
 *
 * @module
 */
import { z } from "zod";
import { jsonShapeProblem, MAX_JSON_DEPTH, readCapped } from "../limits/mod.ts";

/** Longest system prompt of an environment loop (and wiki of an environment), in characters. */
export const MAX_SYSTEM_PROMPT_CHARS = 200_000;

/** Largest answer of an environment, in bytes. */
export const MAX_ENV_ANSWER_BYTES = 8 * 1024 * 1024;
/** Longest observation, in characters. */
export const MAX_OBSERVATION_CHARS = 1_000_000;

/** An action of the agent: a tool call, or `respond` (a message to the user). */
export interface EnvAction {
  readonly name: string;
  readonly kwargs: Record<string, unknown>;
}

/** The name of the action that talks to the user (tau-bench's `RESPOND_ACTION_NAME`). */
export const RESPOND_ACTION = "respond";

/** Where the environment's user simulator reaches a model: Chat Completions on the gateway. */
export interface UserModel {
  readonly base_url: string;
  readonly api_key: string;
  readonly model: string;
}

const Info = z.record(z.string(), z.unknown());

const ResetAnswer = z.object({
  observation: z.string().max(MAX_OBSERVATION_CHARS),
  info: Info.default({}),
  /** The tools the agent may call, as Chat Completions function tools. */
  tools: z.array(z.record(z.string(), z.unknown())).max(128).optional(),
  /** The policy the agent follows (tau-bench's `wiki`), its system prompt by default. */
  wiki: z.string().max(MAX_SYSTEM_PROMPT_CHARS).optional(),
});

const StepAnswer = z.object({
  observation: z.string().max(MAX_OBSERVATION_CHARS),
  reward: z.number().finite().default(0),
  done: z.boolean(),
  info: Info.default({}),
});

/** What a reset answered. */
export type EnvReset = z.output<typeof ResetAnswer>;
/** What a step answered. */
export type EnvStep = z.output<typeof StepAnswer>;

/** The environment could not be reached, or answered something that is not its protocol. */
export class EnvError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EnvError";
  }
}

/** Options of {@linkcode EnvClient}. */
export interface EnvClientOptions {
  /** The episode this client plays: sent with every call. */
  readonly episodeId: string;
  /** Longest one call may take, in milliseconds. */
  readonly timeoutMs: number;
}

/**
 * One episode's calls to a tool environment.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startRetailEnv } from "../../fixtures/retail_env.ts";
 * import { EnvClient } from "./env_client.ts";
 * // A small tau-bench-like retail environment stands in for a real one.
 * const retail = await startRetailEnv();
 * const env = new EnvClient(retail.url, { episodeId: "s1", timeoutMs: 60_000 });
 * const { observation } = await env.reset(0, null);
 * assert.ok(observation.length > 0);
 * const step = await env.step({ name: "respond", kwargs: { content: "Hello" } });
 * assert.equal(typeof step.done, "boolean"); // true once the user is satisfied
 * await retail.close();
 * ```
 */
export class EnvClient {
  constructor(readonly url: string, private readonly options: EnvClientOptions) {}

  /** Starts the episode on task `taskIndex`. @throws {EnvError} */
  reset(taskIndex: number, userModel: UserModel | null, signal?: AbortSignal): Promise<EnvReset> {
    const body = {
      task_index: taskIndex,
      episode_id: this.options.episodeId,
      ...(userModel ? { user_model: userModel } : {}),
    };
    return this.#call("/reset", body, ResetAnswer, signal);
  }

  /** Plays `action`. @throws {EnvError} */
  step(action: EnvAction, signal?: AbortSignal): Promise<EnvStep> {
    return this.#call("/step", { episode_id: this.options.episodeId, action }, StepAnswer, signal);
  }

  async #call<T>(
    path: string,
    body: unknown,
    schema: z.ZodType<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let response: Response;
    try {
      response = await fetch(`${this.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      signal?.throwIfAborted();
      const why = timeout.aborted
        ? `no answer within ${this.options.timeoutMs} ms`
        : (error as Error).message;
      throw new EnvError(`The environment's ${path} failed: ${why}`);
    }
    const bytes = await readCapped(response.body, MAX_ENV_ANSWER_BYTES).catch((error) => {
      signal?.throwIfAborted();
      throw new EnvError(`The environment's ${path} answer broke off: ${error.message}`);
    });
    if (bytes === null) {
      throw new EnvError(
        `The environment's ${path} answered more than ${MAX_ENV_ANSWER_BYTES} bytes`,
      );
    }
    const text = new TextDecoder().decode(bytes);
    if (!response.ok) {
      throw new EnvError(
        `The environment's ${path} answered HTTP ${response.status}: ${text.slice(0, 500)}`,
      );
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new EnvError(`The environment's ${path} answer is not JSON: ${text.slice(0, 200)}`);
    }
    const shape = jsonShapeProblem(value, MAX_JSON_DEPTH);
    if (shape) throw new EnvError(`The environment's ${path} answer: ${shape.message}`);
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new EnvError(
        `The environment's ${path} answer: ${issue.path.join(".") || "body"}: ${issue.message}`,
      );
    }
    return parsed.data;
  }
}
