/**
 * How an attempt ends: its outcome (done with a reward; failed or aborted with a reason), the
 * stop the worker gives its signal, and what an attempt that threw or whose agent gave up
 * because of the infrastructure ends as — never a reward the episode did not earn.
 *
 * @module
 */
import { type EvaluationResult, JudgerError } from "../evaluate/mod.ts";
import { type Store, StoreUnavailableError } from "../kv/mod.ts";
import { RepoError, SandboxUnavailableError } from "../sandbox/mod.ts";
import {
  closeSession,
  engineFailures,
  type LifecycleDeps,
  readSessionSummary,
} from "../session/mod.ts";
import type { AgentOutcome, EpisodeReward } from "./records.ts";
import { SetupError } from "./work_tree.ts";

/** How an attempt ended. */
export type AttemptOutcome =
  | {
    readonly phase: "done";
    readonly agent: AgentOutcome;
    readonly agentLog: string;
    /** The patch graded; `null` for an episode of the environment loop, which has none. */
    readonly patch: string | null;
    /** The evaluation of the patch, or the environment's reward. */
    readonly reward: EvaluationResult | EpisodeReward;
  }
  | {
    readonly phase: "failed" | "aborted";
    readonly reason: string;
    readonly detail: string;
    readonly agent?: AgentOutcome;
    readonly agentLog?: string;
    readonly patch?: string;
    /** The evaluation that found the task at fault (its tests never ran), with its log. */
    readonly evaluation?: EvaluationResult;
  };

/** Why an attempt was stopped from outside: the abort reason the worker gives its signal. */
export class AttemptStop extends Error {
  constructor(readonly reason: string, detail: string) {
    super(detail);
    this.name = "AttemptStop";
  }
}

/**
 * How an attempt that threw `error` ends, with what it had: its session closed as aborted; the
 * attempt aborted with the stop's reason when `signal` stopped it, else failed with
 * `reasonOf(error)`.
 */
export async function endedBy(
  deps: { readonly lifecycle: LifecycleDeps },
  sessionId: string,
  error: unknown,
  signal: AbortSignal,
  had: { agent?: AgentOutcome; agentLog?: string; patch?: string },
  reasonOf: (error: unknown) => string = failureReason,
): Promise<AttemptOutcome> {
  await closeSession(deps.lifecycle, sessionId, { as: "aborted" }).catch((closing) =>
    console.error(`Cannot close session ${sessionId}: ${closing}`)
  );
  const stop = signal.aborted ? signal.reason : null;
  if (stop instanceof AttemptStop) {
    return { phase: "aborted", reason: stop.reason, detail: stop.message, ...had };
  }
  return {
    phase: "failed",
    reason: reasonOf(error),
    detail: (error as Error)?.message ?? String(error),
    ...had,
  };
}

/** The reason of an attempt that failed with `error`. */
export function failureReason(error: unknown): string {
  if (error instanceof SandboxUnavailableError) return "sandbox_unavailable";
  if (error instanceof SetupError) return "setup_failed";
  if (error instanceof RepoError) return "repo_unavailable";
  if (error instanceof StoreUnavailableError) return "store_unavailable";
  if (error instanceof JudgerError) return "judger_failed";
  console.error("Rollout attempt failed:", error);
  return "internal_error";
}

/**
 * Why an agent that ended in failure did so through no fault of the model, or `null`: the engine
 * was unavailable to its turns (past the agent's own retries), or it crashed before the model
 * answered anything. An agent that succeeded, or ran out of time, is the episode's own.
 */
export async function agentFault(
  kv: Store,
  sessionId: string,
  agent: AgentOutcome,
): Promise<{ reason: string; detail: string } | null> {
  if (agent.timedOut || (agent.exitCode === 0 && !agent.result?.startsWith("error"))) return null;
  const how = agent.exitCode === null ? "was killed" : `exited with ${agent.exitCode}`;
  const failures = await engineFailures(kv, sessionId);
  if (failures > 0) {
    return {
      reason: "engine_unavailable",
      detail: `The agent ${how} after the engine was unavailable to ${failures} of its turns`,
    };
  }
  let turns = 0;
  for (const chain of (await readSessionSummary(kv, sessionId)).chains) turns += chain.turns;
  if (turns > 0) return null;
  return { reason: "agent_crashed", detail: `The agent ${how} before the model answered anything` };
}
