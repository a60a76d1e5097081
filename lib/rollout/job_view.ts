/**
 * A job at a glance: its phase, its progress (turns and tokens its session has recorded, time
 * elapsed) and, once it has them, its reward, patch and the agent's end.
 *
 * @module
 */
import type { JobOutcome } from "./outcome.ts";
import type { CodedError } from "../errors/mod.ts";
import type { EvaluationResult } from "../evaluate/mod.ts";
import { getRolloutJob, readRolloutBlob } from "./rollout_store.ts";
import { readSessionSummary, SessionNotFoundError } from "../session/mod.ts";
import type { AgentOutcome, EpisodeReward, RolloutJobRecord } from "./records.ts";
import type { Store } from "../kv/mod.ts";

/** What a job's summary shows of its record as it is (each field as the record says it). */
type RecordFields =
  | "id"
  | "groupId"
  | "index"
  | "phase"
  | "reason"
  | "detail"
  | "attempt"
  | "maxAttempts"
  | "sessionId"
  | "sessions"
  | "createdAt"
  | "startedAt"
  | "finishedAt"
  | "deadlineAt"
  | "cancelRequested";

/**
 * A job at a glance; times in epoch ms: its record's fields (its worker, blobs and retry times
 * left out), what the record leaves absent made `null`, and what is read beside it.
 */
export type JobSummary = Pick<RolloutJobRecord, RecordFields> & {
  /** Whose failure its end was, once finished (`agent`: its reward is real); `null` before. */
  readonly outcome: JobOutcome | null;
  /** When the finished job is deleted (with the session retention). */
  readonly expiresAt: number | null;
  readonly progress: {
    /** Turns its session's chains have recorded. */
    readonly turns: number;
    /** Tokens its session's chains have recorded. */
    readonly tokens: number;
    /** From its start to its finish, or to now while it runs; 0 before it starts. */
    readonly elapsedMs: number;
  };
  /** The attempt's outcome, as far as it went; `null` before it has any part of it. */
  readonly result: {
    /** The patch's evaluation, or an environment loop's reward. */
    readonly reward: EvaluationResult | EpisodeReward | null;
    readonly patch: string | null;
    /** How the agent ended, and the end of its log. */
    readonly agent: AgentOutcome & { readonly logTail: string | null } | null;
  } | null;
};

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
 * The summary of job `jobId`.
 *
 * @throws {JobNotFoundError}
 */
export async function readJobSummary(
  kv: Store,
  jobId: string,
  now = Date.now(),
): Promise<JobSummary> {
  checkJobId(jobId);
  const job = (await getRolloutJob(kv, jobId)).value;
  if (job === null) throw new JobNotFoundError(jobId);
  return await summarizeJob(kv, job, now);
}

/** The summary of a job record, with its session's progress and its result's blobs. */
export async function summarizeJob(
  kv: Store,
  job: RolloutJobRecord,
  now = Date.now(),
): Promise<JobSummary> {
  let turns = 0;
  let tokens = 0;
  if (job.sessionId !== null) {
    try {
      for (const chain of (await readSessionSummary(kv, job.sessionId)).chains) {
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
    exitCode: job.agent.exitCode,
    timedOut: job.agent.timedOut,
    numTurns: job.agent.numTurns,
    result: job.agent.result,
    logTail: log,
  };
  return {
    id: job.id,
    groupId: job.groupId,
    index: job.index,
    phase: job.phase,
    reason: job.reason,
    outcome: job.outcome ?? null,
    detail: job.detail,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    sessionId: job.sessionId,
    sessions: job.sessions,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    finishedAt: job.finishedAt,
    deadlineAt: job.deadlineAt,
    expiresAt: job.expiresAt ?? null,
    cancelRequested: job.cancelRequested,
    progress: {
      turns,
      tokens,
      elapsedMs: job.startedAt === null ? 0 : (job.finishedAt ?? now) - job.startedAt,
    },
    result: reward === null && patch === null && agent === null ? null : { reward, patch, agent },
  };
}
