/**
 * One attempt at one job: a session, a sandbox with the task's repository, the agent run in
 * it against the gateway with the session's token, its patch collected, graded in a fresh
 * sandbox, the reward attached to the session — and, whatever happens, every sandbox killed and
 * the session closed.
 *
 * @module
 */
import { evaluate, type EvaluateDeps, logTail, repoSource, type Task } from "../evaluate/mod.ts";
import { shellQuote } from "../shell/mod.ts";
import { modifyRolloutJob } from "./rollout_store.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  type ExecResult,
  forwardTarget,
  type Sandbox,
  type SandboxBackend,
} from "../sandbox/mod.ts";
import { closeSession, type LifecycleDeps, openSession, setReward } from "../session/mod.ts";
import { bootScope, boundedBackend } from "./boot_slots.ts";
import {
  type AgentInstall,
  type AgentInstalls,
  agentNamed,
  type AnyAgent,
  type CliSettings,
} from "../agents/mod.ts";
import { agentCommand, fillPrompt, prepareAgent, readAgentOutcome } from "./harness.ts";
import type { AgentOutcome, RolloutJobRecord, RolloutPhase } from "./records.ts";
import type { RolloutSettings } from "./request.ts";
import { collectPatch, installAgent, prepareWorkTree } from "./work_tree.ts";
import { withLocalTree } from "./group_tree.ts";
import { agentFault, type AttemptOutcome, endedBy } from "./attempt_end.ts";
import { type Store } from "../kv/mod.ts";

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
 * {@linkcode AttemptStop} reason (cancelled, wall-clock guard, shutdown). Its steps: the parts
 * it needs checked, the session opened, the agent's sandbox booted on the task's work tree, the
 * agent run and its patch collected, a run the infrastructure spoiled ended ungraded, the patch
 * graded and the reward set.
 */
export async function runAttempt(
  deps: AttemptDeps,
  job: RolloutJobRecord,
  task: Task,
  settings: CliRolloutSettings,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const parts = attemptParts(deps, settings);
  if ("phase" in parts) return parts;
  const session = await openAttemptSession(deps, job, settings);
  const sessionId = session.session.id;
  let sandbox: Sandbox | null = null;
  const had: { agent?: AgentOutcome; agentLog?: string; patch?: string } = {};
  try {
    // A work tree its group keeps in the store is unpacked here first (the host that built it
    // may be another, or gone).
    task = await withLocalTree(deps.kv, job.groupId, task, deps.evaluate.cacheDir);
    const reach = gatewayReach(deps, parts.backend);
    sandbox = await bootAgentSandbox(deps, job, task, settings, parts, reach, signal);
    const base = await prepareWorkTree(sandbox, task, {
      timeoutMs: task.timeout_ms ?? deps.evaluate.timeoutMs,
      outputBytes: deps.outputBytes,
    }, signal);
    await setAttemptPhase(deps.kv, job, "agent", deps.metrics);
    const run = await runAgent(deps, sandbox, task, settings, parts, {
      url: reach.insideUrl,
      token: session.token,
    }, signal);
    const agent = { exitCode: run.exitCode, timedOut: run.timedOut, ...run.outcome };
    had.agent = agent;
    had.agentLog = agentLogOf(run);
    const patch = had.patch = await collectPatch(sandbox, base, deps, signal);
    await sandbox.kill();
    sandbox = null;
    const ungraded = await ungradedEnd(deps, sessionId, settings, {
      agent,
      agentLog: had.agentLog,
      patch,
    });
    if (ungraded !== null) return ungraded;
    await setAttemptPhase(deps.kv, job, "evaluating", deps.metrics);
    return await gradeAttempt(deps, job, task, settings, parts.backend, sessionId, {
      agent,
      agentLog: had.agentLog,
      patch,
    }, signal);
  } catch (error) {
    await sandbox?.kill();
    sandbox = null;
    return await endedBy(deps, sessionId, error, signal, had);
  } finally {
    await sandbox?.kill();
  }
}

/** What an attempt runs with: its backend, its agent's record and install, and how it gets it. */
interface AttemptParts {
  readonly backend: SandboxBackend;
  readonly harness: AnyAgent;
  readonly install: AgentInstall;
  /** The agent's CLI is this machine's, lent to the sandbox (else installed inside it). */
  readonly lent: boolean;
}

/** The parts `settings` name, or the failed outcome of an attempt that cannot have them. */
function attemptParts(
  deps: AttemptDeps,
  settings: CliRolloutSettings,
): AttemptParts | AttemptOutcome {
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
  return { backend, harness, install, lent };
}

/** How the agent reaches the gateway from its sandbox. */
interface GatewayReach {
  /** Through a port forwarded to the gateway alone (else over the sandbox's own network). */
  readonly forwarded: boolean;
  readonly gatewayUrl: URL;
  /** The gateway's URL as the agent inside the sandbox uses it. */
  readonly insideUrl: string;
}

/**
 * A forwarded agent reaches the gateway and nothing else (no host loopback, no engine); a
 * networked one (a machine of its own) reaches the gateway over the network.
 */
function gatewayReach(deps: AttemptDeps, backend: SandboxBackend): GatewayReach {
  const forwarded = backend.capabilities.gatewayReach === "forward";
  const gatewayUrl = new URL(deps.gatewayUrl());
  const insideUrl = forwarded
    ? `http://127.0.0.1:${GATEWAY_PORT_INSIDE}${gatewayUrl.pathname.replace(/\/$/, "")}`
    : deps.gatewayUrl();
  return { forwarded, gatewayUrl, insideUrl };
}

/** The agent's sandbox: the task's repository at its base commit, the agent's CLI bound in. */
async function bootAgentSandbox(
  deps: AttemptDeps,
  job: RolloutJobRecord,
  task: Task,
  settings: CliRolloutSettings,
  parts: AttemptParts,
  reach: GatewayReach,
  signal: AbortSignal,
): Promise<Sandbox> {
  const slots = slotsOf(deps, parts.backend, job.id, settings);
  return await boundedBackend(deps.kv, parts.backend, slots).create({
    repo: await repoSource(task, deps.evaluate.cacheDir),
    commit: task.base_commit,
    template: settings.sandbox.template ?? task.template,
    metadata: { purpose: "agent", rollout_job: job.id },
    network: !reach.forwarded,
    forward: reach.forwarded
      ? { port: GATEWAY_PORT_INSIDE, to: forwardTarget(reach.gatewayUrl.href) }
      : undefined,
    binds: parts.lent ? parts.install.local!.binds : [],
    // A backstop behind the wall-clock guard, which stops the attempt first.
    lifetimeMs: Math.max(0, (job.deadlineAt ?? Date.now()) - Date.now()) + LIFETIME_SLACK_MS,
    signal,
  });
}

/** The agent's run in `sandbox` against the gateway at `gateway`, with what it reported. */
async function runAgent(
  deps: AttemptDeps,
  sandbox: Sandbox,
  task: Task,
  settings: CliRolloutSettings,
  parts: AttemptParts,
  gateway: { url: string; token: string },
  signal: AbortSignal,
): Promise<ExecResult & { outcome: ReturnType<typeof readAgentOutcome> }> {
  const prompt = fillPrompt(settings.agent.prompt_template, task);
  const env = await prepareAgent(sandbox, settings.agent, {
    baseUrl: gateway.url,
    token: gateway.token,
    model: deps.modelId,
    contextLength: deps.contextLength,
  }, prompt);
  const { install } = parts;
  // A command needs nothing installed: its program is its own command line.
  const program = parts.lent || install.npm === null ? install.local?.program ?? "" : shellQuote(
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
  return { ...run, outcome: readAgentOutcome(settings.agent, run.stdout) };
}

/** What the agent's run left: its outcome, its log, its patch. */
interface AgentRan {
  readonly agent: AgentOutcome;
  readonly agentLog: string;
  readonly patch: string;
}

/**
 * The end of an attempt not to grade, its session closed as aborted, or `null` to grade it: an
 * agent past its budget with `on_agent_timeout: abort`, or one that gave up because of the
 * infrastructure (a zero it did not earn).
 */
async function ungradedEnd(
  deps: AttemptDeps,
  sessionId: string,
  settings: CliRolloutSettings,
  ran: AgentRan,
): Promise<AttemptOutcome | null> {
  let end: AttemptOutcome | null = null;
  if (ran.agent.timedOut && settings.budgets.on_agent_timeout === "abort") {
    end = {
      phase: "aborted",
      reason: "agent_timeout",
      detail: `The agent ran past its budget of ${settings.budgets.agent_ms} ms`,
      ...ran,
    };
  } else {
    const fault = await agentFault(deps.kv, sessionId, ran.agent);
    if (fault !== null) end = { phase: "failed", ...fault, ...ran };
  }
  if (end !== null) await closeSession(deps.lifecycle, sessionId, { as: "aborted" });
  return end;
}

/**
 * The agent's patch graded in a fresh sandbox, the reward set on the session and the session
 * closed; a task whose tests did not run (at the base commit either) gives no reward: the task's
 * fault, the session closed as aborted.
 */
async function gradeAttempt(
  deps: AttemptDeps,
  job: RolloutJobRecord,
  task: Task,
  settings: CliRolloutSettings,
  backend: SandboxBackend,
  sessionId: string,
  ran: AgentRan,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const graded = settings.budgets.eval_ms === undefined
    ? task
    : { ...task, timeout_ms: settings.budgets.eval_ms };
  const reward = await evaluate(
    {
      ...deps.evaluate,
      backend: boundedBackend(deps.kv, backend, slotsOf(deps, backend, job.id, settings)),
    },
    { task: graded, patch: ran.patch, signal },
  );
  signal.throwIfAborted();
  if (reward.score === null) {
    await closeSession(deps.lifecycle, sessionId, { as: "aborted" });
    return {
      phase: "failed",
      reason: reward.reason,
      detail: reward.detail ?? reward.reason,
      ...ran,
      evaluation: reward,
    };
  }
  await setReward(deps.lifecycle, sessionId, { ...reward, score: reward.score });
  await closeSession(deps.lifecycle, sessionId);
  return { phase: "done", ...ran, reward };
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

/** The end of the agent's output: its log (stdout), then what it wrote to stderr. */
function agentLogOf(run: ExecResult): string {
  return logTail(run.stderr.trim() ? `${run.stdout}\n[stderr]\n${run.stderr}` : run.stdout);
}

function failed(reason: string, detail: string): AttemptOutcome {
  return { phase: "failed", reason, detail };
}
