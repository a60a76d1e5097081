/**
 * A `/rollout` body that names a Harbor task directory, made into one that holds the task: the
 * directory read once (its jobs never read it again), its instruction the problem statement, and
 * its agent timeout the agent's budget unless the body gives one.
 *
 * @module
 */
import {
  type HarborRef,
  type HarborResolveOptions,
  type ResolvedHarborTask,
  resolveHarborTask,
} from "../evaluate/mod.ts";

/** Longest agent budget a Harbor task's timeout is taken as, in milliseconds (the schema's). */
const MAX_AGENT_MS = 7 * 86_400_000;
/** Shortest one, in milliseconds. */
const MIN_AGENT_MS = 1000;

/**
 * The raw body `raw` with its Harbor task `ref` resolved (`body`): to be validated again whole,
 * since the instruction now fills the prompt, whose size is bounded. `environment` is the
 * repository built here from the folder's `environment/`, which the group keeps in the store
 * (`submitGroup`'s `environment`) so that any host runs its jobs.
 *
 * @throws {HarborTaskError} with a message starting `task.harbor: `.
 */
export async function resolveHarborRollout(
  raw: Readonly<Record<string, unknown>>,
  ref: HarborRef,
  options: HarborResolveOptions,
): Promise<{ body: Record<string, unknown>; environment: ResolvedHarborTask["environment"] }> {
  const resolved = await resolveHarborTask(ref, options);
  const given = raw.budgets;
  const budgets = given !== null && typeof given === "object" && !Array.isArray(given)
    ? given as Record<string, unknown>
    : {};
  const agentMs = budgets.agent_ms === undefined && resolved.agentTimeoutMs !== null
    ? { agent_ms: Math.min(MAX_AGENT_MS, Math.max(MIN_AGENT_MS, resolved.agentTimeoutMs)) }
    : {};
  return {
    body: { ...raw, task: resolved.task, budgets: { ...budgets, ...agentMs } },
    environment: resolved.environment,
  };
}
