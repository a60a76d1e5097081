/**
 * Grading and rollouts, built from the configuration: the judgers (loaded and checked first, so
 * a bad one stops start-up before anything is opened), the sandbox backends this configuration
 * can make (each boot counted), how `/evaluate` and a rollout's grading run (verdicts kept in the
 * store, shared by every host), and this process's rollout worker.
 *
 * @module
 */
import { agentInstalls } from "../lib/agents/mod.ts";
import type { Config } from "../lib/config/mod.ts";
import { ConfigError } from "../lib/errors/mod.ts";
import {
  type Judger,
  JudgerConfigError,
  keptVerdicts,
  loadJudgers,
  storeBaseRuns,
  type TaskValidation,
  type ValidateDeps,
} from "../lib/evaluate/mod.ts";
import type { Store } from "../lib/kv/mod.ts";
import type { GatewayMetrics } from "../lib/metrics/mod.ts";
import { RolloutWorker } from "../lib/rollout/mod.ts";
import { countedBackend, type SandboxBackend, sandboxBackends } from "../lib/sandbox/mod.ts";
import type { LifecycleDeps } from "../lib/session/mod.ts";

/**
 * The configured judgers, by name.
 *
 * @throws {ConfigError} naming `JUDGERS` when one cannot be loaded.
 */
export async function configuredJudgers(config: Config): Promise<ReadonlyMap<string, Judger>> {
  try {
    return await loadJudgers(config.judgers, config.defaultJudger, Deno.cwd());
  } catch (error) {
    if (error instanceof JudgerConfigError) throw new ConfigError("JUDGERS", error.message);
    throw error;
  }
}

/** The sandbox backends, each boot counted, and the default one. */
export interface Sandboxes {
  readonly sandboxes: ReadonlyMap<string, SandboxBackend>;
  readonly sandbox: SandboxBackend;
}

/**
 * Every backend this configuration can make (`given` alone when a test supplies one), each boot
 * counted whichever path (an evaluation, an agent's sandbox) takes it; the default is
 * `SANDBOX_BACKEND`'s.
 */
export function buildSandboxes(
  config: Config,
  metrics: GatewayMetrics,
  given?: SandboxBackend,
): Sandboxes {
  const backends = given ? new Map([[given.name, given]]) : sandboxBackends(config, {
    // Local sandboxes never see the gateway's KV folder.
    hidden: config.kvPath === ":memory:" ? [] : [dirOf(config.kvPath)],
  });
  const sandboxes = new Map(
    [...backends].map(([name, backend]) => [name, countedBackend(backend, metrics)]),
  );
  return { sandboxes, sandbox: sandboxes.get(given?.name ?? config.sandboxBackend)! };
}

/** How evaluations run: in the default backend, their verdicts and base runs kept in `kv`. */
export function evaluationDeps(
  config: Config,
  parts: {
    kv: Store;
    sandbox: SandboxBackend;
    judgers: ReadonlyMap<string, Judger>;
    metrics: GatewayMetrics;
    holder: string;
  },
): ValidateDeps {
  const kept = (waitMs: number) => ({
    ttlMs: config.evalVerdictTtlMs,
    holder: parts.holder,
    leaseTtlMs: config.leaseTtlMs,
    waitMs,
  });
  return {
    backend: parts.sandbox,
    judgers: parts.judgers,
    defaultJudger: config.defaultJudger,
    timeoutMs: config.evalTimeoutMs,
    outputBytes: config.sandboxOutputBytes,
    cacheDir: `${config.sandboxRoot}/cache`,
    metrics: parts.metrics,
    // A run takes at most its time limit, after its boot.
    baseRuns: storeBaseRuns(parts.kv, kept(config.evalTimeoutMs + 10 * 60_000)),
    // A solution's run, then two runs of the tests with it, each after its boot.
    validations: keptVerdicts<TaskValidation>(
      parts.kv,
      "validation",
      kept(3 * config.evalTimeoutMs + 10 * 60_000),
    ),
  };
}

/** This process's rollout worker, and how it learns where the gateway listens. */
export interface Rollouts {
  readonly rollout: RolloutWorker;
  /** Tells the worker where this process listens (agents reach the gateway there). */
  setListening(url: string): void;
}

/** The rollout worker: jobs run in `sandboxes`, graded by `evaluation`, their agents installed. */
export async function buildRollouts(
  config: Config,
  parts: {
    kv: Store;
    lifecycle: LifecycleDeps;
    sandboxes: Sandboxes;
    evaluation: ValidateDeps;
    contextLength: number;
    metrics: GatewayMetrics;
    holder: string;
  },
): Promise<Rollouts> {
  let listening: string | null = null;
  const rollout = new RolloutWorker({
    kv: parts.kv,
    lifecycle: parts.lifecycle,
    backends: parts.sandboxes.sandboxes,
    defaultBackend: parts.sandboxes.sandbox.name,
    evaluate: parts.evaluation,
    gatewayUrl: () => {
      const url = config.rollout.gatewayUrl ?? listening;
      if (url === null) {
        throw new Error("The gateway's own URL is unknown: set ROLLOUT_GATEWAY_URL");
      }
      return url;
    },
    modelId: config.modelId,
    contextLength: parts.contextLength,
    agents: await agentInstalls(config.rollout.agents),
    bootSlots: config.rollout.bootConcurrency,
    hostId: config.hostId,
    leaseTtlMs: config.leaseTtlMs,
    holder: parts.holder,
    outputBytes: config.sandboxOutputBytes,
    metrics: parts.metrics,
  }, { concurrency: config.rollout.concurrency, pollMs: config.rollout.pollMs });
  return { rollout, setListening: (url) => void (listening = url) };
}

function dirOf(path: string): string {
  const absolute = path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
  return absolute.slice(0, absolute.lastIndexOf("/")) || "/";
}
