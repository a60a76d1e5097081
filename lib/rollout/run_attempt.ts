/**
 * One attempt at one job: a session, a sandbox with the task's repository, the agent run in
 * it against the gateway with the session's token, its patch collected, graded in a fresh
 * sandbox, the reward attached to the session — and, whatever happens, every sandbox killed and
 * the session closed.
 *
 * @module
 */
import {
  evaluate,
  type EvaluateDeps,
  type EvaluationResult,
  JudgerError,
  logTail,
  repoSource,
  type Task,
} from "../evaluate/mod.ts";
import { shellQuote } from "../shell/mod.ts";
import { modifyRolloutJob } from "./rollout_store.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  type ExecResult,
  forwardTarget,
  RepoError,
  type Sandbox,
  type SandboxBackend,
  SandboxUnavailableError,
} from "../sandbox/mod.ts";
import {
  closeSession,
  engineFailures,
  type LifecycleDeps,
  openSession,
  readSessionSummary,
  setReward,
} from "../session/mod.ts";
import { bootScope, boundedBackend } from "./boot_slots.ts";
import { type AgentInstalls, agentNamed, type CliSettings } from "../agents/mod.ts";
import { agentCommand, fillPrompt, prepareAgent, readAgentOutcome } from "./harness.ts";
import type { AgentOutcome, EpisodeReward, RolloutJobRecord, RolloutPhase } from "./records.ts";
import type { RolloutSettings } from "./request.ts";
import { collectPatch, installAgent, prepareWorkTree, SetupError } from "./work_tree.ts";
import { withLocalTree } from "./group_tree.ts";
import { type Store, StoreUnavailableError } from "../kv/mod.ts";

/** What an attempt needs from the gateway. */
export interface AttemptDeps {
  readonly kv: Store;
  readonly lifecycle: LifecycleDeps;
  /** Sandbox backends by name (`local`, and `e2b` when configured). */
  readonly backends: ReadonlyMap<string, SandboxBackend>;
  /** The backend of requests that name none. */
  readonly defaultBackend: string;
  /** How evaluations run (its `backend` is replaced by the job's). */
  readonly evaluate: EvaluateDeps;
  /** The URL agents in sandboxes reach the gateway at. */
  readonly gatewayUrl: () => string;
  /** The model id agents ask for unless the request says. */
  readonly modelId: string;
  /** The served model's context window, for agents that are told it. */
  readonly contextLength: number;
  /** Each harness's CLI: on this machine (lent to local sandboxes), and for E2B to install. */
  readonly agents: AgentInstalls;
  /** Sandbox boots at once across every process booting in one place (`bootScope`). */
  readonly bootSlots: number;
  /** This machine's name among the hosts sharing the store (`HOST_ID`). */
  readonly hostId: string;
  readonly leaseTtlMs: number;
  /** Identifies this process in leases. */
  readonly holder: string;
  /** Bytes of output kept per command. */
  readonly outputBytes: number;
  /** Counts phase transitions and running jobs; nothing is counted without it. */
  readonly metrics?: GatewayMetrics;
}

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

/** How long an agent's sandbox outlives the attempt's deadline before its backend kills it. */
const LIFETIME_SLACK_MS = 30_000;
/** The port a local agent reaches the gateway at, on its sandbox's own loopback. */
const GATEWAY_PORT_INSIDE = 8080;

/** The settings of a group whose agent is a CLI. */
export type CliRolloutSettings = RolloutSettings & { readonly agent: CliSettings };

/**
 * Moves the job to `phase`, unless another attempt took over or it is there already; the move is
 * counted in `metrics`, when given.
 */
export async function setAttemptPhase(
  kv: Store,
  job: RolloutJobRecord,
  phase: RolloutPhase,
  metrics?: GatewayMetrics,
): Promise<Deno.KvEntry<RolloutJobRecord> | null> {
  const written = await modifyRolloutJob(
    kv,
    job.id,
    (current) =>
      current.attempt === job.attempt && current.phase !== phase ? { ...current, phase } : null,
  );
  if (written) metrics?.rolloutJobs.inc(phase);
  return written;
}

/**
 * Opens the attempt's session: the request's labels, and the group, index, job and attempt it
 * belongs to.
 */
export function openAttemptSession(
  deps: AttemptDeps,
  job: RolloutJobRecord,
  settings: RolloutSettings,
) {
  return openSession(deps.kv, {
    id: job.sessionId!,
    metadata: {
      ...settings.metadata,
      group_id: job.groupId,
      sample_index: job.index,
      rollout_job: job.id,
      attempt: job.attempt,
    },
    allocation: settings.reward_allocation ?? settings.reward_mode,
    recordMessages: settings.record_messages,
  });
}

/**
 * Runs attempt `job.attempt` of `job` until it ends; `signal` aborts it with an
 * {@linkcode AttemptStop} reason (cancelled, wall-clock guard, shutdown).
 */
export async function runAttempt(
  deps: AttemptDeps,
  job: RolloutJobRecord,
  task: Task,
  settings: CliRolloutSettings,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const setPhase = (phase: RolloutPhase) => setAttemptPhase(deps.kv, job, phase, deps.metrics);
  const backendName = settings.sandbox.backend ?? deps.defaultBackend;
  const backend = deps.backends.get(backendName);
  if (!backend) {
    return failed("sandbox_unavailable", `The ${backendName} sandbox backend is not configured`);
  }
  const harness = agentNamed(settings.agent.harness);
  const install = deps.agents.get(settings.agent.harness);
  if (harness === undefined || install === undefined) {
    return failed("agent_unavailable", `No harness ${settings.agent.harness} is registered`);
  }
  const lent = backend.capabilities.agentInstall === "lent";
  if (lent && install.local === null) {
    return failed(
      "agent_unavailable",
      `${harness.title} is not installed on this machine: ${harness.installHint}`,
    );
  }
  const session = await openAttemptSession(deps, job, settings);
  let sandbox: Sandbox | null = null;
  let agent: AgentOutcome | undefined;
  let agentLog: string | undefined;
  let patch: string | undefined;
  try {
    // A work tree its group keeps in the store is unpacked here first (the host that built it
    // may be another, or gone).
    task = await withLocalTree(deps.kv, job.groupId, task, deps.evaluate.cacheDir);
    const binds = lent ? install.local!.binds : [];
    // A forwarded agent reaches the gateway and nothing else (no host loopback, no engine); a
    // networked one (a machine of its own) reaches the gateway over the network.
    const forwarded = backend.capabilities.gatewayReach === "forward";
    const gatewayUrl = new URL(deps.gatewayUrl());
    sandbox = await boundedBackend(deps.kv, backend, slotsOf(deps, backend, job.id, settings))
      .create({
        repo: await repoSource(task, deps.evaluate.cacheDir),
        commit: task.base_commit,
        template: settings.sandbox.template ?? task.template,
        metadata: { purpose: "agent", rollout_job: job.id },
        network: !forwarded,
        forward: forwarded
          ? { port: GATEWAY_PORT_INSIDE, to: forwardTarget(gatewayUrl.href) }
          : undefined,
        binds,
        // A backstop behind the wall-clock guard, which stops the attempt first.
        lifetimeMs: Math.max(0, (job.deadlineAt ?? Date.now()) - Date.now()) + LIFETIME_SLACK_MS,
        signal,
      });
    const base = await prepareWorkTree(sandbox, task, {
      timeoutMs: task.timeout_ms ?? deps.evaluate.timeoutMs,
      outputBytes: deps.outputBytes,
    }, signal);

    await setPhase("agent");
    const insideUrl = forwarded
      ? `http://127.0.0.1:${GATEWAY_PORT_INSIDE}${gatewayUrl.pathname.replace(/\/$/, "")}`
      : deps.gatewayUrl();
    const prompt = fillPrompt(settings.agent.prompt_template, task);
    const env = await prepareAgent(sandbox, settings.agent, {
      baseUrl: insideUrl,
      token: session.token,
      model: deps.modelId,
      contextLength: deps.contextLength,
    }, prompt);
    // A command needs nothing installed: its program is its own command line.
    const program = lent || install.npm === null ? install.local?.program ?? "" : shellQuote(
      await installAgent(sandbox, install.npm, settings.agent.env, {
        timeoutMs: settings.budgets.agent_ms,
        outputBytes: deps.outputBytes,
      }, signal),
    );
    const command = agentCommand(settings.agent, { program, prompt, tmpdir: sandbox.tmpdir });
    const run = await sandbox.exec(command, {
      timeoutMs: settings.budgets.agent_ms,
      env,
      outputBytes: deps.outputBytes,
      signal,
    });
    signal.throwIfAborted();
    agent = {
      exitCode: run.exitCode,
      timedOut: run.timedOut,
      ...readAgentOutcome(settings.agent, run.stdout),
    };
    agentLog = agentLogOf(run);
    patch = await collectPatch(sandbox, base, deps, signal);
    await sandbox.kill();
    sandbox = null;
    if (run.timedOut && settings.budgets.on_agent_timeout === "abort") {
      await closeSession(deps.lifecycle, session.session.id, { as: "aborted" });
      return {
        phase: "aborted",
        reason: "agent_timeout",
        detail: `The agent ran past its budget of ${settings.budgets.agent_ms} ms`,
        agent,
        agentLog,
        patch,
      };
    }
    // An agent that gave up because of the infrastructure is not graded: a zero it did not earn.
    const fault = await agentFault(deps.kv, session.session.id, agent);
    if (fault !== null) {
      await closeSession(deps.lifecycle, session.session.id, { as: "aborted" });
      return { phase: "failed", ...fault, agent, agentLog, patch };
    }

    await setPhase("evaluating");
    const graded = settings.budgets.eval_ms === undefined
      ? task
      : { ...task, timeout_ms: settings.budgets.eval_ms };
    const reward = await evaluate(
      {
        ...deps.evaluate,
        backend: boundedBackend(deps.kv, backend, slotsOf(deps, backend, job.id, settings)),
      },
      { task: graded, patch, signal },
    );
    signal.throwIfAborted();
    if (reward.score === null) {
      // The task's tests did not run, at the base commit either: no reward, the task's fault.
      await closeSession(deps.lifecycle, session.session.id, { as: "aborted" });
      return {
        phase: "failed",
        reason: reward.reason,
        detail: reward.detail ?? reward.reason,
        agent,
        agentLog,
        patch,
        evaluation: reward,
      };
    }
    await setReward(deps.lifecycle, session.session.id, { ...reward, score: reward.score });
    await closeSession(deps.lifecycle, session.session.id);
    return { phase: "done", agent, agentLog, patch, reward };
  } catch (error) {
    await sandbox?.kill();
    sandbox = null;
    return await endedBy(deps, session.session.id, error, signal, { agent, agentLog, patch });
  } finally {
    await sandbox?.kill();
  }
}

/** The boot slots and policy of this attempt's sandboxes. */
function slotsOf(
  deps: AttemptDeps,
  backend: SandboxBackend,
  jobId: string,
  settings: CliRolloutSettings,
) {
  return {
    holder: `${deps.holder}/${jobId}`,
    scope: bootScope(backend, deps.hostId),
    slots: deps.bootSlots,
    ttlMs: deps.leaseTtlMs,
    bootMs: settings.budgets.boot_ms,
    backoffMs: settings.retry_backoff_ms,
  };
}

/**
 * How an attempt that threw `error` ends, with what it had: its session closed as aborted; the
 * attempt aborted with the stop's reason when `signal` stopped it, else failed with
 * `reasonOf(error)`.
 */
export async function endedBy(
  deps: AttemptDeps,
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

/** The end of the agent's output: its log (stdout), then what it wrote to stderr. */
function agentLogOf(run: ExecResult): string {
  return logTail(run.stderr.trim() ? `${run.stdout}\n[stderr]\n${run.stderr}` : run.stdout);
}

function failed(reason: string, detail: string): AttemptOutcome {
  return { phase: "failed", reason, detail };
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
