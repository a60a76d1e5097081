/**
 * Which registered test runners a local sandbox can run: each runner's probe run on this host
 * with a sandbox's `PATH` (local sandboxes see the host's programs read-only). Said at start-up,
 * so that a machine without pytest is told before its first rollout grades nothing.
 *
 * @module
 */
import { SANDBOX_BASE_ENV } from "../sandbox/mod.ts";
import { type Runner, RUNNERS, TASK_RUNNERS } from "./task.ts";

/** Whether each registered runner can run here. */
export type RunnersHere = ReadonlyMap<Runner, boolean>;

/**
 * Probes every registered runner at once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runnersHere } from "./runners_here.ts";
 * const here = await runnersHere();
 * assert.deepEqual([...here.keys()], ["unittest", "pytest", "node"]);
 * ```
 */
export async function runnersHere(): Promise<RunnersHere> {
  const found = await Promise.all(RUNNERS.map((runner) => runs(TASK_RUNNERS[runner].probe)));
  return new Map(RUNNERS.map((runner, i) => [runner, found[i]]));
}

/** `runners` in words: each ready, or missing with how to install it. */
export function describeRunners(runners: RunnersHere): string {
  return [...runners].map(([runner, ready]) =>
    ready ? `${runner} ready` : `${runner} missing (${TASK_RUNNERS[runner].install})`
  ).join(", ");
}

async function runs([command, ...args]: readonly string[]): Promise<boolean> {
  try {
    const child = new Deno.Command(command, {
      args,
      env: { PATH: SANDBOX_BASE_ENV.PATH },
      clearEnv: true,
      stdout: "null",
      stderr: "null",
    });
    return (await child.output()).success;
  } catch {
    return false; // not found
  }
}
