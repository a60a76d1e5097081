/**
 * A sandbox backend whose boots are counted: each `create` by outcome, and its time, whatever
 * the outcome, labelled by backend.
 *
 * @module
 */
import { type GatewayMetrics, SANDBOX_BACKENDS } from "../metrics/mod.ts";
import { RepoError, type SandboxBackend, SandboxUnavailableError } from "./sandbox.ts";

/**
 * `backend` with its boots counted in `metrics`.
 *
 * @example
 * ```ts
 * import { fixtureRepo } from "../evaluate/mod.ts";
 * import { createMetrics } from "../metrics/mod.ts";
 * import { countedBackend } from "./counted_backend.ts";
 * import { LocalBackend } from "./local.ts";
 * const root = await Deno.makeTempDir();
 * const metrics = createMetrics();
 * const backend = countedBackend(new LocalBackend({ root }), metrics);
 * const repo = { kind: "path" as const, path: await fixtureRepo("python_unittest", root) };
 * // rollout_gateway_sandbox_boots_total{backend="local",outcome="ok"} + 1
 * await backend.create({ repo, commit: "1bdf00de", network: false, lifetimeMs: 60_000 });
 * await backend.close();
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export function countedBackend(backend: SandboxBackend, metrics: GatewayMetrics): SandboxBackend {
  // The metric's labels are a fixed list: a backend it does not list counts as `other`.
  const label = SANDBOX_BACKENDS.find((known) => known === backend.name) ?? "other";
  return {
    ...backendFacts(backend),
    create: async (spec) => {
      const started = performance.now();
      try {
        const sandbox = await backend.create(spec);
        metrics.sandboxBoots.inc(label, "ok");
        return sandbox;
      } catch (error) {
        metrics.sandboxBoots.inc(label, bootOutcome(error, spec.signal));
        throw error;
      } finally {
        metrics.sandboxBootSeconds.observe((performance.now() - started) / 1000, label);
      }
    },
    close: () => backend.close(),
  };
}

function bootOutcome(error: unknown, signal: AbortSignal | undefined) {
  if (signal?.aborted) return "cancelled";
  if (error instanceof SandboxUnavailableError) return "unavailable";
  if (error instanceof RepoError) return "bad_repo";
  return "error";
}

/** What a wrapper of `backend` says of itself: the backend's name, capabilities and location. */
export function backendFacts(
  backend: SandboxBackend,
): Pick<SandboxBackend, "name" | "capabilities" | "location"> {
  return {
    name: backend.name,
    capabilities: backend.capabilities,
    ...(backend.location === undefined ? {} : { location: backend.location }),
  };
}
