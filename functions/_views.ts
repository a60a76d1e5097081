/**
 * The JSON views of the admin API: a session (`GET /sessions/:id`, the listing, reward and close
 * answers, the `raw` export's `session`), a job (`GET /rollout/:id`, a group's listing,
 * `DELETE /rollout/:id`) and a Harbor task folder (`GET /tasks`), built from `lib`'s camelCase
 * summaries. Field names are snake_case, times ISO 8601 strings, in the order the API documents.
 *
 * @module
 */
import { z } from "zod";
import type {
  HarborTaskFacts,
  HarborTaskList,
  HarborTaskProblem,
  TaskValidation,
} from "../lib/evaluate/mod.ts";
import type { JobSummary } from "../lib/rollout/mod.ts";
import type { ChainSummary, SessionSummary } from "../lib/session/mod.ts";

/** A session as the API shows it. */
export interface SessionJson {
  readonly id: string;
  readonly status: SessionSummary["status"];
  readonly created_at: string;
  readonly closed_at: string | null;
  readonly closed_as: SessionSummary["closedAs"];
  readonly expires_at: string | null;
  readonly metadata: SessionSummary["metadata"];
  readonly record_messages: boolean;
  readonly reward: SessionSummary["reward"];
  readonly chains: ChainJson[];
}

/** One chain of a session as the API shows it. */
export interface ChainJson {
  readonly id: string;
  readonly kind: ChainSummary["kind"];
  readonly role: ChainSummary["role"];
  readonly parent: string | null;
  readonly dispatch: string | null;
  readonly agent_id: string | null;
  readonly children: string[];
  readonly model: string;
  readonly turns: number;
  readonly tokens: number;
  readonly created_at: string;
  readonly wiped_at: string | null;
}

/** A job as the API shows it. */
export interface JobJson {
  readonly id: string;
  readonly group_id: string;
  readonly index: number;
  readonly phase: JobSummary["phase"];
  readonly reason: string | null;
  readonly outcome: JobSummary["outcome"];
  readonly detail: string | null;
  readonly attempt: number;
  readonly max_attempts: number;
  readonly session_id: string | null;
  readonly sessions: readonly string[];
  readonly created_at: string;
  readonly started_at: string | null;
  readonly finished_at: string | null;
  readonly deadline_at: string | null;
  readonly expires_at: string | null;
  readonly cancel_requested: boolean;
  readonly progress: {
    readonly turns: number;
    readonly tokens: number;
    readonly elapsed_ms: number;
  };
  readonly result: {
    readonly reward: NonNullable<JobSummary["result"]>["reward"];
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

/** A Harbor task folder as `GET /tasks` shows it. */
export interface HarborTaskJson {
  readonly name: string;
  readonly path: string;
  readonly description: string | null;
  readonly difficulty: string | null;
  readonly category: string | null;
  readonly tags: readonly string[];
  readonly agent_timeout_sec: number | null;
  readonly verifier_timeout_sec: number | null;
  readonly docker_image: string | null;
  readonly workdir: string;
}

/** Epoch milliseconds as ISO 8601; `null` stays `null`. */
function iso(ms: number): string;
function iso(ms: number | null): string | null;
function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/**
 * The JSON of a session.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionJson } from "./_views.ts";
 * const json = sessionJson({
 *   id: "s1",
 *   status: "open",
 *   createdAt: 0,
 *   closedAt: null,
 *   closedAs: null,
 *   expiresAt: null,
 *   metadata: {},
 *   recordMessages: false,
 *   reward: null,
 *   chains: [],
 * });
 * assert.equal(json.created_at, "1970-01-01T00:00:00.000Z");
 * assert.equal(json.record_messages, false);
 * ```
 */
export function sessionJson(session: SessionSummary): SessionJson {
  return {
    id: session.id,
    status: session.status,
    created_at: iso(session.createdAt),
    closed_at: iso(session.closedAt),
    closed_as: session.closedAs,
    expires_at: iso(session.expiresAt),
    metadata: session.metadata,
    record_messages: session.recordMessages,
    reward: session.reward,
    chains: session.chains.map(chainJson),
  };
}

/** The JSON of one chain of a session. */
function chainJson(chain: ChainSummary): ChainJson {
  return {
    id: chain.id,
    kind: chain.kind,
    role: chain.role,
    parent: chain.parent,
    dispatch: chain.dispatch,
    agent_id: chain.agentId,
    children: chain.children,
    model: chain.model,
    turns: chain.turns,
    tokens: chain.tokens,
    created_at: iso(chain.createdAt),
    wiped_at: iso(chain.wipedAt),
  };
}

/** The sessions' listing, as its cursors name it (the trainer API's and the viewer's). */
export const SESSIONS_LISTING = "sessions";

/**
 * A listing's `cursor` parameter, shaped as `CursorSeal` seals them (KV's base64url, a dot, a
 * MAC): anything else cannot be one. The seal itself is checked when the listing opens it.
 */
export const SealedCursor = z.string().min(1).max(2760).regex(
  /^[A-Za-z0-9_=-]+\.[A-Za-z0-9_-]+$/,
  "not a cursor a listing handed out",
);

/**
 * The JSON of a page of sessions: `next_cursor` is `null` on the last page.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sessionPageJson } from "./_views.ts";
 * assert.deepEqual(sessionPageJson({ sessions: [], cursor: null }), {
 *   sessions: [],
 *   next_cursor: null,
 * });
 * ```
 */
export function sessionPageJson(
  page: { readonly sessions: readonly SessionSummary[]; readonly cursor: string | null },
): { sessions: SessionJson[]; next_cursor: string | null } {
  return { sessions: page.sessions.map(sessionJson), next_cursor: page.cursor };
}

/**
 * The JSON of a job.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jobJson } from "./_views.ts";
 * const json = jobJson({
 *   id: "job_1",
 *   groupId: "grp_1",
 *   index: 0,
 *   phase: "queued",
 *   reason: null,
 *   outcome: null,
 *   detail: null,
 *   attempt: 0,
 *   maxAttempts: 2,
 *   sessionId: null,
 *   sessions: [],
 *   createdAt: 1_000,
 *   startedAt: null,
 *   finishedAt: null,
 *   deadlineAt: null,
 *   expiresAt: null,
 *   cancelRequested: false,
 *   progress: { turns: 0, tokens: 0, elapsedMs: 0 },
 *   result: null,
 * });
 * assert.equal(json.created_at, "1970-01-01T00:00:01.000Z");
 * assert.deepEqual(json.progress, { turns: 0, tokens: 0, elapsed_ms: 0 });
 * ```
 */
export function jobJson(job: JobSummary): JobJson {
  const { result } = job;
  const agent = result?.agent ?? null;
  return {
    id: job.id,
    group_id: job.groupId,
    index: job.index,
    phase: job.phase,
    reason: job.reason,
    outcome: job.outcome,
    detail: job.detail,
    attempt: job.attempt,
    max_attempts: job.maxAttempts,
    session_id: job.sessionId,
    sessions: job.sessions,
    created_at: iso(job.createdAt),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
    deadline_at: iso(job.deadlineAt),
    expires_at: iso(job.expiresAt),
    cancel_requested: job.cancelRequested,
    progress: {
      turns: job.progress.turns,
      tokens: job.progress.tokens,
      elapsed_ms: job.progress.elapsedMs,
    },
    result: result === null ? null : {
      reward: result.reward,
      patch: result.patch,
      agent: agent === null ? null : {
        exit_code: agent.exitCode,
        timed_out: agent.timedOut,
        num_turns: agent.numTurns,
        result: agent.result,
        log_tail: agent.logTail,
      },
    },
  };
}

/** The JSON of a Harbor task folder's facts. */
function harborTaskJson(task: HarborTaskFacts): HarborTaskJson {
  return {
    name: task.name,
    path: task.path,
    description: task.description,
    difficulty: task.difficulty,
    category: task.category,
    tags: task.tags,
    agent_timeout_sec: task.agentTimeoutSec,
    verifier_timeout_sec: task.verifierTimeoutSec,
    docker_image: task.dockerImage,
    workdir: task.workdir,
  };
}

/**
 * The JSON of a task folder listing: each folder's facts, or why it does not load.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { taskListJson } from "./_views.ts";
 * const problem = { name: "x", path: "/tasks/x", error: "no task.toml" };
 * assert.deepEqual(taskListJson({ dir: "/tasks", tasks: [problem], truncated: false }), {
 *   dir: "/tasks",
 *   tasks: [problem],
 *   truncated: false,
 * });
 * ```
 */
export function taskListJson(list: HarborTaskList): {
  dir: string;
  tasks: (HarborTaskJson | HarborTaskProblem)[];
  truncated: boolean;
} {
  return {
    dir: list.dir,
    tasks: list.tasks.map((task) => "error" in task ? task : harborTaskJson(task)),
    truncated: list.truncated,
  };
}

/** A task's validation as `POST /evaluate/validate` answers it. */
export type ValidationJson = Omit<TaskValidation, "at"> & {
  /** When the verdict was reached (ISO 8601): a kept one may be older than the request. */
  checked_at: string;
  /** Whether it was kept from an earlier validation (no sandbox booted for this one). */
  cached: boolean;
};

/**
 * The answer of `POST /evaluate/validate`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { validationJson } from "./_views.ts";
 * const verdict = {
 *   valid: true,
 *   problems: [],
 *   flaky: [],
 *   flaky_count: 0,
 *   base: [],
 *   gold: null,
 *   gold_source: null,
 *   digest: "d",
 *   backend: "local",
 *   at: 0,
 *   duration_ms: 5,
 * };
 * assert.equal(validationJson(verdict, true).checked_at, "1970-01-01T00:00:00.000Z");
 * ```
 */
export function validationJson(verdict: TaskValidation, cached: boolean): ValidationJson {
  const { at, ...rest } = verdict;
  return { ...rest, checked_at: new Date(at).toISOString(), cached };
}
