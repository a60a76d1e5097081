/**
 * The rollout worker every gateway process runs: it scans KV for unfinished jobs, takes a job's
 * lease before touching it, runs attempts up to `concurrency` at once, guards each with its
 * wall-clock deadline, and picks up jobs whose worker died — retrying them while attempts
 * remain, else failing them with the reason. A job is never left running without a live lease.
 *
 * @module
 */
import {
  commit,
  deleteBlob,
  type HeldLease,
  keys,
  StoreUnavailableError,
  tryLease,
} from "../kv/mod.ts";
import { logBackgroundFailure } from "../errors/mod.ts";
import {
  getRolloutGroup,
  getRolloutJob,
  listActiveRolloutJobs,
  modifyRolloutJob,
  readRolloutTask,
  updateRolloutJob,
  writeRolloutBlob,
} from "./rollout_store.ts";
import { sessionToolTurns } from "./group_view.ts";
import { closeSession, SessionNotFoundError } from "../session/mod.ts";
import { FINAL_PHASES, type RolloutJobRecord } from "./records.ts";
import { isEnvTask } from "./env_task.ts";
import type { RolloutSettings, RolloutTask } from "./request.ts";
import { nextStep } from "./next_step.ts";
import { judgeEnd, retryDelayMs } from "./outcome.ts";
import { type AttemptDeps, type CliRolloutSettings, runAttempt } from "./run_attempt.ts";
import { type AttemptOutcome, AttemptStop } from "./attempt_end.ts";
import { type EnvRolloutSettings, runEnvLoopAttempt, userSessionId } from "./env_loop_attempt.ts";

/** How a worker runs. */
export interface WorkerOptions {
  /** Attempts this process runs at once. */
  readonly concurrency: number;
  /** How often KV is scanned for jobs, and running jobs are checked for a cancel, in ms. */
  readonly pollMs: number;
}

/** Groups whose task spec is kept in memory. */
const TASK_CACHE_GROUPS = 64;

interface Running {
  readonly controller: AbortController;
  readonly done: Promise<void>;
}

/** Scans for jobs and runs them. One per process; every process on the KV may run one. */
export class RolloutWorker {
  readonly #running = new Map<string, Running>();
  readonly #tasks = new Map<string, Promise<{ task: RolloutTask; settings: RolloutSettings }>>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #scanning: Promise<void> | null = null;
  #again = false;
  #started = false;
  #stopped = false;

  constructor(readonly deps: AttemptDeps, readonly options: WorkerOptions) {}

  /** Starts scanning every `pollMs`. */
  start(): void {
    this.#started = true;
    this.#timer ??= setInterval(() => this.kick(), this.options.pollMs);
    this.kick();
  }

  /**
   * Scans now (a job was submitted or finished here); a scan in progress runs once more. Does
   * nothing in a process whose worker is not started (`ROLLOUT_WORKER=false`).
   */
  kick(): void {
    if (!this.#started || this.#stopped) return;
    if (this.#scanning) {
      this.#again = true;
      return;
    }
    this.#scanning = (async () => {
      do {
        this.#again = false;
        await this.#scan().catch((error) => logBackgroundFailure("Rollout scan", error));
      } while (this.#again && !this.#stopped);
      this.#scanning = null;
    })();
  }

  /** Stops a job running here at once (its record says it was cancelled). */
  cancelLocal(jobId: string): boolean {
    const running = this.#running.get(jobId);
    running?.controller.abort(new AttemptStop("cancelled", "Cancelled by DELETE"));
    return running !== undefined;
  }

  /**
   * Stops scanning and stops every job running here; each is handed back (queued again while
   * attempts remain) for another process to finish.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    for (const running of this.#running.values()) {
      running.controller.abort(new AttemptStop("shutdown", "The gateway process shut down"));
    }
    await Promise.all([...this.#running.values()].map((running) => running.done));
    await this.#scanning;
  }

  async #scan(): Promise<void> {
    for (const jobId of await listActiveRolloutJobs(this.deps.kv)) {
      if (this.#stopped || this.#running.size >= this.options.concurrency) return;
      if (this.#running.has(jobId)) continue;
      await this.#claim(jobId);
    }
  }

  async #claim(jobId: string): Promise<void> {
    const { kv } = this.deps;
    const attempt = await tryLease(kv, keys.rolloutLease(jobId), `${this.deps.holder}/${jobId}`, {
      ttlMs: this.deps.leaseTtlMs,
      waitMs: 0,
      metrics: this.deps.metrics,
    });
    if (!("lease" in attempt)) return; // another process is on it
    const lease = attempt.lease;
    let handedOff = false;
    try {
      const entry = await getRolloutJob(kv, jobId);
      if (entry.value === null) {
        await kv.delete(keys.rolloutActive(jobId));
        return;
      }
      const job = entry.value;
      const step = nextStep(job, Date.now());
      if (step.kind === "skip") {
        await kv.delete(keys.rolloutActive(jobId));
        return;
      }
      if (step.kind === "wait") return;
      if (step.kind === "finish") {
        await this.#closeAborted(job.sessionId);
        await this.#finish(job, step.phase, step.reason, step.detail);
        return;
      }
      if (job.phase !== "queued") await this.#closeAborted(job.sessionId);
      let group: { task: RolloutTask; settings: RolloutSettings };
      try {
        group = await this.#taskOf(job.groupId);
      } catch (error) {
        // A store that did not answer will: the job stays for a later scan.
        if (error instanceof StoreUnavailableError) throw error;
        // A group that cannot be read will not become readable: finish the job, do not spin.
        const detail = `Cannot read the job's group: ${(error as Error)?.message ?? error}`;
        await this.#finish(job, "failed", "internal_error", detail);
        return;
      }
      const { task, settings } = group;
      const now = Date.now();
      const number = job.attempt + 1;
      // An environment loop has no evaluation: its budget is the agent's.
      const evalMs = isEnvTask(task)
        ? 0
        : settings.budgets.eval_ms ?? task.timeout_ms ?? this.deps.evaluate.timeoutMs;
      const limitMs = settings.budgets.agent_ms + evalMs + settings.budgets.margin_ms;
      const sessionId = `${job.id}_a${number}`;
      const started = await updateRolloutJob(kv, entry as Deno.KvEntry<RolloutJobRecord>, {
        ...job,
        phase: "booting",
        reason: null,
        detail: step.note,
        attempt: number,
        sessionId,
        sessions: [...job.sessions, sessionId],
        startedAt: now,
        finishedAt: null,
        deadlineAt: now + limitMs,
        worker: this.deps.holder,
        agent: null,
        blobs: {},
        notBefore: null,
      });
      if (!started) return; // changed meanwhile (a cancel): the next scan sees it
      this.deps.metrics?.rolloutJobs.inc("booting");
      handedOff = true;
      this.#start(started.value, task, settings, lease, limitMs);
    } finally {
      if (!handedOff) await lease.release();
    }
  }

  /** Runs an attempt in the background, guarded, and records how it ended. */
  #start(
    job: RolloutJobRecord,
    task: RolloutTask,
    settings: RolloutSettings,
    lease: HeldLease,
    limitMs: number,
  ): void {
    const controller = new AbortController();
    const stop = (reason: string, detail: string) => {
      if (!controller.signal.aborted) controller.abort(new AttemptStop(reason, detail));
    };
    const guard = setTimeout(
      () => stop("wall_clock_timeout", `The job ran past its wall-clock limit of ${limitMs} ms`),
      Math.max(0, job.deadlineAt! - Date.now()),
    );
    // A cancel may arrive at another process: the record says so. A lost lease means another
    // worker may take the job over: stop before it does anything twice.
    const watch = setInterval(async () => {
      if (!lease.held) return stop("lease_lost", "This worker lost the job's lease");
      const current = (await getRolloutJob(this.deps.kv, job.id).catch(() => null))?.value;
      if (current?.cancelRequested) stop("cancelled", "Cancelled by DELETE");
    }, Math.min(this.options.pollMs, 250));
    const done = (async () => {
      let outcome: AttemptOutcome;
      try {
        outcome = isEnvTask(task)
          ? await runEnvLoopAttempt(
            this.deps,
            job,
            task,
            settings as EnvRolloutSettings,
            controller.signal,
          )
          : await runAttempt(
            this.deps,
            job,
            task,
            settings as CliRolloutSettings,
            controller.signal,
          );
      } catch (error) {
        outcome = {
          phase: "failed",
          reason: "internal_error",
          detail: (error as Error)?.message ?? String(error),
        };
      } finally {
        clearTimeout(guard);
        clearInterval(watch);
      }
      try {
        if (lease.held) await this.#record(job, outcome, settings);
      } catch (error) {
        console.error(`Cannot record the end of rollout job ${job.id}:`, error);
      } finally {
        await lease.release();
        this.#running.delete(job.id);
        this.deps.metrics?.rolloutRunning.set(this.#running.size);
        this.kick();
      }
    })();
    this.#running.set(job.id, { controller, done });
    this.deps.metrics?.rolloutRunning.set(this.#running.size);
  }

  /**
   * Writes an attempt's blobs, then its record: finished, with whose failure its end was; queued
   * again after a backoff when the infrastructure failed it and a retry can help (attempts and
   * the group's `retry_budget` left); handed back when this process shut down.
   */
  async #record(
    job: RolloutJobRecord,
    outcome: AttemptOutcome,
    settings: RolloutSettings,
  ): Promise<void> {
    const { kv } = this.deps;
    if (outcome.phase === "aborted" && outcome.reason === "lease_lost") return;
    const blobs: Record<string, number> = {};
    const put = async (name: string, value: unknown) => {
      if (value !== undefined) {
        blobs[name] = await writeRolloutBlob(kv, job.id, job.attempt, name, value);
      }
    };
    await put("patch", outcome.patch ?? undefined);
    await put("agent_log", outcome.agentLog);
    await put("reward", outcome.phase === "done" ? outcome.reward : outcome.evaluation);
    // The summary is for the viewer and metrics: a count that cannot be read never loses the job.
    const toolTurns = outcome.phase === "done" && job.sessionId !== null
      ? await sessionToolTurns(kv, job.sessionId).catch((error) => {
        console.warn(`Cannot count the tool turns of rollout job ${job.id}:`, error);
        return undefined;
      })
      : undefined;
    const summary = outcome.phase === "done"
      ? { score: outcome.reward.score, ...(toolTurns === undefined ? {} : { toolTurns }) }
      : {};
    const handBack = outcome.phase === "aborted" && outcome.reason === "shutdown" &&
      job.attempt < job.maxAttempts;
    const failure = outcome.phase === "done" ? null : outcome;
    const judged = judgeEnd(failure?.reason ?? "done");
    const delayMs = retryDelayMs(job.attempt, settings.retry_backoff_ms, Math.random());
    // A retry must start within the job's wall-clock budget, when it has one.
    const jobMs = settings.budgets.job_ms;
    const inTime = jobMs === undefined || Date.now() + delayMs < job.createdAt + jobMs;
    const retry = !handBack && failure !== null && judged.retry && inTime &&
      job.attempt < job.maxAttempts && await this.#spendRetry(job.groupId, settings);
    const written = await modifyRolloutJob(kv, job.id, (current) => {
      if (current.attempt !== job.attempt || FINAL_PHASES.has(current.phase)) return null;
      if (handBack) {
        return {
          ...current,
          phase: "queued",
          detail: `Attempt ${job.attempt} was stopped by a shutdown`,
          worker: null,
        };
      }
      if (retry && failure !== null && !current.cancelRequested) {
        return {
          ...current,
          phase: "queued",
          reason: failure.reason,
          detail: `Attempt ${job.attempt} failed on the infrastructure (${failure.reason}: ${
            failure.detail.slice(0, 500)
          }); retried after ${delayMs} ms`,
          worker: null,
          notBefore: Date.now() + delayMs,
          agent: outcome.agent ?? null,
          blobs,
        };
      }
      return {
        ...current,
        phase: outcome.phase,
        reason: outcome.phase === "done" ? null : outcome.reason,
        detail: outcome.phase === "done" ? current.detail : outcome.detail,
        ...this.#finishedNow(),
        agent: outcome.agent ?? null,
        blobs,
        outcome: judged.outcome,
        ...summary,
      };
    });
    // Someone else finished or took the job meanwhile: these blobs belong to no record.
    if (!written) await deleteBlob(kv, keys.rolloutAttemptBlobs(job.id, job.attempt));
    else this.deps.metrics?.rolloutJobs.inc(written.value.phase);
  }

  /**
   * Takes one retry of the group's `retry_budget` (`n` when unset); `false` when none is left.
   * The count is checked and raised in one commit, so processes never spend more than it.
   */
  async #spendRetry(groupId: string, settings: RolloutSettings): Promise<boolean> {
    const { kv } = this.deps;
    const budget = settings.retry_budget ?? settings.n;
    const key = keys.rolloutRetries(groupId);
    for (;;) {
      const entry = await kv.get<Deno.KvU64>(key);
      const spent = entry.value === null ? 0 : Number(entry.value.value);
      if (spent >= budget) return false;
      const taken = await commit(() =>
        kv.atomic().check(entry).set(key, new Deno.KvU64(BigInt(spent + 1)))
      );
      if (taken.ok) return true;
    }
  }

  /** Ends `job` in `phase` unless it moved on meanwhile (another attempt, already finished). */
  async #finish(
    job: RolloutJobRecord,
    phase: "failed" | "aborted",
    reason: string,
    detail: string,
  ): Promise<void> {
    const written = await modifyRolloutJob(
      this.deps.kv,
      job.id,
      (current) =>
        current.attempt !== job.attempt || FINAL_PHASES.has(current.phase) ? null : {
          ...current,
          phase,
          reason,
          detail,
          ...this.#finishedNow(),
          outcome: judgeEnd(reason).outcome,
        },
    );
    if (written) this.deps.metrics?.rolloutJobs.inc(phase);
  }

  /**
   * A job finishing now, and when it is deleted: the session retention later, from one reading
   * of the clock (two could differ by a millisecond).
   */
  #finishedNow(): { finishedAt: number; expiresAt: number } {
    const finishedAt = Date.now();
    return { finishedAt, expiresAt: finishedAt + this.deps.lifecycle.retentionMs };
  }

  /** Closes an attempt's session as aborted, and its user simulator's when it had one. */
  async #closeAborted(sessionId: string | null): Promise<void> {
    if (sessionId === null) return;
    for (const id of [sessionId, userSessionId(sessionId)]) {
      await closeSession(this.deps.lifecycle, id, { as: "aborted" }).catch((error) => {
        if (!(error instanceof SessionNotFoundError)) throw error;
      });
    }
  }

  #taskOf(groupId: string): Promise<{ task: RolloutTask; settings: RolloutSettings }> {
    let found = this.#tasks.get(groupId);
    if (!found) {
      // Recent groups only: a long-lived process sees many.
      if (this.#tasks.size >= TASK_CACHE_GROUPS) {
        this.#tasks.delete(this.#tasks.keys().next().value!);
      }
      found = (async () => {
        const group = await getRolloutGroup(this.deps.kv, groupId);
        if (!group) throw new Error(`Rollout group "${groupId}" is missing`);
        return {
          task: await readRolloutTask<RolloutTask>(this.deps.kv, group),
          settings: group.settings as RolloutSettings,
        };
      })();
      found.catch(() => this.#tasks.delete(groupId));
      this.#tasks.set(groupId, found);
    }
    return found;
  }
}
