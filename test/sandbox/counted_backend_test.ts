import assert from "node:assert/strict";
import { createMetrics } from "../../lib/metrics/mod.ts";
import {
  countedBackend,
  LOCAL_CAPABILITIES,
  RepoError,
  type Sandbox,
  type SandboxBackend,
  type SandboxSpec,
  SandboxUnavailableError,
} from "../../lib/sandbox/mod.ts";
import { nonZero } from "../_prometheus.ts";

/** A backend that answers each boot with the next of `outcomes`: a sandbox, or an error. */
function scriptedBackend(name: string, outcomes: (Error | null)[]) {
  let closed = 0;
  const backend: SandboxBackend = {
    name,
    capabilities: LOCAL_CAPABILITIES,
    create: (spec) => {
      const outcome = outcomes.shift();
      if (outcome) return Promise.reject(spec.signal?.aborted ? spec.signal.reason : outcome);
      return Promise.resolve({ id: `${name}-1`, backend: name } as Sandbox);
    },
    close: () => {
      closed++;
      return Promise.resolve();
    },
  };
  return { backend, closed: () => closed };
}

const SPEC = { repo: { kind: "path", path: "/repo" }, network: false, lifetimeMs: 1000 } as const;

Deno.test("countedBackend() counts each boot by backend and outcome, and times every one", async () => {
  const metrics = createMetrics();
  const local = scriptedBackend("local", [
    null,
    null,
    new SandboxUnavailableError("bubblewrap is not installed"),
    new RepoError('Repository "/repo" is not a git repository on this machine'),
    new Error("disk full"),
  ]);
  const counted = countedBackend(local.backend, metrics);
  assert.equal(counted.name, "local");
  assert.equal((await counted.create(SPEC as SandboxSpec)).id, "local-1");
  await counted.create(SPEC as SandboxSpec);
  await assert.rejects(counted.create(SPEC as SandboxSpec), SandboxUnavailableError);
  await assert.rejects(counted.create(SPEC as SandboxSpec), RepoError);
  await assert.rejects(counted.create(SPEC as SandboxSpec), /disk full/);
  const cancelled = new AbortController();
  cancelled.abort(new Error("Cancelled by DELETE"));
  const fake = countedBackend(scriptedBackend("fake", [new Error("boot")]).backend, metrics);
  await assert.rejects(
    fake.create({ ...SPEC, signal: cancelled.signal } as SandboxSpec),
    /Cancelled by DELETE/,
  );
  await counted.close();
  assert.equal(local.closed(), 1);
  assert.deepEqual(nonZero(metrics), {
    'rollout_gateway_sandbox_boots_total{backend="local",outcome="ok"}': 2,
    'rollout_gateway_sandbox_boots_total{backend="local",outcome="unavailable"}': 1,
    'rollout_gateway_sandbox_boots_total{backend="local",outcome="bad_repo"}': 1,
    'rollout_gateway_sandbox_boots_total{backend="local",outcome="error"}': 1,
    'rollout_gateway_sandbox_boots_total{backend="other",outcome="cancelled"}': 1,
    'rollout_gateway_sandbox_boot_seconds_count{backend="local"}': 5,
    'rollout_gateway_sandbox_boot_seconds_count{backend="other"}': 1,
  });
});
