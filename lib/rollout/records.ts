/**
 * The stored shapes of a rollout: a group of jobs and the phases a job goes through. The
 * rollout layer builds and reads them; `rollout_store.ts` keeps them in KV.
 *
 * @module
 */
import type { AgentEnd } from "../agents/mod.ts";
import type { RewardPayload } from "../session/mod.ts";
import type { EpisodeStatus } from "./env_loop.ts";
import type { JobOutcome } from "./outcome.ts";

/** Phases a job never leaves. */
export type FinalPhase = "done" | "failed" | "aborted";

/** Where a job is. `done`, `failed` and `aborted` are final. */
export type RolloutPhase = "queued" | "booting" | "agent" | "evaluating" | FinalPhase;

/**
 * Phases a job never leaves, as a set to test a job's phase against.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FINAL_PHASES } from "./records.ts";
 * assert.equal(FINAL_PHASES.has("aborted"), true);
 * assert.equal(FINAL_PHASES.has("evaluating"), false);
 * ```
 */
export const FINAL_PHASES: ReadonlySet<RolloutPhase> = new Set<FinalPhase>([
  "done",
  "failed",
  "aborted",
]);

/** How the agent of an attempt ended: its process's exit, and what it said of its end. */
export interface AgentOutcome extends AgentEnd {
  /** The agent process's exit status; `null` when it was killed. */
  readonly exitCode: number | null;
  /** It ran past its time budget and was stopped. */
  readonly timedOut: boolean;
}

/** One job of a group: one run of its task. */
export interface RolloutJobRecord {
  readonly id: string;
  readonly groupId: string;
  /** Position in the group, from 0. */
  readonly index: number;
  readonly phase: RolloutPhase;
  /** Why a job failed or was aborted (`wall_clock_timeout`, `cancelled`, `worker_lost`, …). */
  readonly reason: string | null;
  /** The reason in words. */
  readonly detail: string | null;
  /** Attempts started; 0 while first queued. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The session of the current (or last) attempt. */
  readonly sessionId: string | null;
  /** Every attempt's session, oldest first. */
  readonly sessions: readonly string[];
  readonly createdAt: number;
  /** When the current attempt started. */
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  /** The wall-clock guard of the current attempt. */
  readonly deadlineAt: number | null;
  /** DELETE asked for it: the worker stops it. */
  readonly cancelRequested: boolean;
  /** Holder id of the worker of the current attempt. */
  readonly worker: string | null;
  readonly agent: AgentOutcome | null;
  /** Chunk counts of the current attempt's blobs (`patch`, `reward`, `agent_log`). */
  readonly blobs: Readonly<Record<string, number>>;
  /** When a finished job is deleted (its session keeps its own retention); `null` before. */
  readonly expiresAt?: number | null;
  /** The reward's score of a `done` job; absent otherwise (and on jobs recorded before). */
  readonly score?: number;
  /** Turns of its session whose reply carried tool calls, once `done`; absent otherwise. */
  readonly toolTurns?: number;
  /**
   * Whose failure its end was, once finished (`lib/rollout/outcome.ts`): `agent` (its reward is
   * real) or `infra` (it carries none); absent before, and on jobs recorded before it was kept.
   */
  readonly outcome?: JobOutcome;
  /** A job queued for a retry is not started before this time. */
  readonly notBefore?: number | null;
}

/** A group of jobs of one task. */
export interface RolloutGroupRecord {
  readonly id: string;
  readonly createdAt: number;
  readonly jobs: readonly string[];
  /** Chunks of the task spec blob. */
  readonly taskChunks: number;
  /** The work tree the group keeps in the store, when its task's `repo` names one. */
  readonly tree?: GroupTreeRecord;
  /** The request's settings besides the task (agent, sandbox, budgets, reward mode). */
  readonly settings: unknown;
}

/**
 * A work tree kept with its group (a Harbor task's `environment/`, which only the submitting
 * host could build): a git bundle of one commit in `chunks` chunks, unpacked by any host.
 */
export interface GroupTreeRecord {
  /** The digest of its files: the task's `repo` is `tree:<digest>`. */
  readonly digest: string;
  /** The commit the bundle's `HEAD` is (the task's `base_commit`). */
  readonly commit: string;
  readonly chunks: number;
  /** The bundle's size. */
  readonly bytes: number;
}

/** The reward of an episode: the environment's, with how the episode ended. */
export interface EpisodeReward extends RewardPayload {
  readonly score: number;
  readonly status: EpisodeStatus;
  readonly steps: number;
  readonly turns: number;
  /** The environment's last `info`; `{truncated: true, bytes}` when it is too large to keep. */
  readonly info: Record<string, unknown>;
}
