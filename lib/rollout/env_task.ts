/**
 * The task of an environment loop: a tool environment reached over HTTP and the index of the
 * task it resets to (tau-bench's `env.reset(task_index)`).
 *
 * @module
 */
import { z } from "zod";

/** Longest environment URL, in characters. */
export const MAX_ENV_URL_CHARS = 2048;

/** A tool environment's task, as a `/rollout` request gives it. */
export const EnvTaskSchema = z.strictObject({
  /** The environment's base URL: `POST {environment}/reset` and `/step` are under it. */
  environment: z.string().max(MAX_ENV_URL_CHARS).regex(
    /^https?:\/\/\S+$/,
    "expected an http(s) URL",
  )
    .transform((url) => url.replace(/\/+$/, "")),
  /** The task the environment resets to. */
  task_index: z.number().int().min(0).max(1_000_000_000),
});

/** A validated environment task. */
export type EnvTask = z.output<typeof EnvTaskSchema>;

/** True when `task` names a tool environment rather than a repository. */
export function isEnvTask(task: unknown): task is EnvTask {
  return task !== null && typeof task === "object" && Object.hasOwn(task, "environment");
}
