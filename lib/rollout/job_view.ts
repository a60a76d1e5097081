/**
 * What `GET /rollout/:id` shows of a job: its phase, its progress (turns and tokens its session
 * has recorded, time elapsed) and, once it has them, its reward, patch and the agent's end.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import type { EvaluationResult } from "../evaluate/mod.ts";
import { getRolloutJob, readRolloutBlob } from "../kv/mod.ts";
import { describeSession, SessionNotFoundError } from "../session/mod.ts";
import type { RolloutJobRecord, RolloutPhase } from "./records.ts";
import type { EpisodeReward } from "./run_episode.ts";

/** A job as the API shows it. */
export interface JobView {
  readonly id: string;
  readonly group_id: string;
  readonly index: number;
  readonly phase: RolloutPhase;
  /** Why it failed or was aborted; `null` otherwise. */
  readonly reason: string | null;
  readonly detail: string | null;
  readonly attempt: number;
  readonly max_attempts: number;
  /** The session of the current (or last) attempt: its samples are the job's samples. */
  readonly session_id: string | null;
  readonly sessions: readonly string[];
  readonly created_at: string;
  readonly started_at: string | null;
  readonly finished_at: string | null;
  readonly deadline_at: string | null;
  /** When the finished job is deleted (with the session retention). */
  readonly expires_at: string | null;
  readonly cancel_requested: boolean;
  readonly progress: {
    readonly turns: number;
    readonly tokens: number;
    readonly elapsed_ms: number;
  };
  /** The attempt's outcome, as far as it went. */
  readonly result: {
    /** The patch's evaluation, or an environment loop's reward. */
    readonly reward: EvaluationResult | EpisodeReward | null;
    readonly patch: string | null;
    readonly agent: {
      readonly exit_code: number | null;
      readonly timed_out: boolean;
      readonly num_turns: number | null;
      readonly result: string | null;
      readonly log_tail: string | null;
    } | null;
  } | null;
}

/** A rollout job, or group, not found (HTTP 404). */
export class JobNotFoundError extends Error implements CodedError {
  readonly code = "job_not_found" as const;
  constructor(id: string, what: "job" | "group" = "job") {
    super(`Rollout ${what} "${id.length > 64 ? `${id.slice(0, 64)}…` : id}" not found`);
    this.name = "JobNotFoundError";
  }
}

/**
 * Longest id a job can have, in characters (`job_` and 24 hex digits, or a test's shorter
 * one). A longer one is not looked up: it names no job, and a KV key holds at most 2 KiB.
 */
export const MAX_JOB_ID_CHARS = 128;

/**
 * Checks that `jobId` could name a job before it is looked up.
 *
 * @throws {JobNotFoundError} for an id longer than {@linkcode MAX_JOB_ID_CHARS}.
 */
export function checkJobId(jobId: string): void {
  if (jobId.length > MAX_JOB_ID_CHARS) throw new JobNotFoundError(jobId);
}

/**
 * The view of job `jobId`.
 *
 * @throws {JobNotFoundError}
 */
export async function describeJob(kv: Deno.Kv, jobId: string, now = Date.now()): Promise<JobView> {
  checkJobId(jobId);
  const job = (await getRolloutJob(kv, jobId)).value;
  if (job === null) throw new JobNotFoundError(jobId);
  return await viewOf(kv, job, now);
}

/** The view of a job record. */
export async function viewOf(
  kv: Deno.Kv,
  job: RolloutJobRecord,
  now = Date.now(),
): Promise<JobView> {
  const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();
  let turns = 0;
  let tokens = 0;
  if (job.sessionId !== null) {
    try {
      for (const chain of (await describeSession(kv, job.sessionId)).chains) {
        turns += chain.turns;
        tokens += chain.tokens;
      }
    } catch (error) {
      if (!(error instanceof SessionNotFoundError)) throw error; // not opened yet, or expired
    }
  }
  const [reward, patch, log] = await Promise.all([
    readRolloutBlob<EvaluationResult | EpisodeReward>(kv, job, "reward"),
    readRolloutBlob<string>(kv, job, "patch"),
    readRolloutBlob<string>(kv, job, "agent_log"),
  ]);
  const agent = job.agent === null ? null : {
    exit_code: job.agent.exitCode,
    timed_out: job.agent.timedOut,
    num_turns: job.agent.numTurns,
    result: job.agent.result,
    log_tail: log,
  };
  return {
    id: job.id,
    group_id: job.groupId,
    index: job.index,
    phase: job.phase,
    reason: job.reason,
    detail: job.detail,
    attempt: job.attempt,
    max_attempts: job.maxAttempts,
    session_id: job.sessionId,
    sessions: job.sessions,
    created_at: new Date(job.createdAt).toISOString(),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
    deadline_at: iso(job.deadlineAt),
    expires_at: iso(job.expiresAt ?? null),
    cancel_requested: job.cancelRequested,
    progress: {
      turns,
      tokens,
      elapsed_ms: job.startedAt === null ? 0 : (job.finishedAt ?? now) - job.startedAt,
    },
    result: reward === null && patch === null && agent === null ? null : { reward, patch, agent },
  };
}
