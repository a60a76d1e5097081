/**
 * Sandbox boots bounded across every gateway process on one KV: `slots` leases, one per boot in
 * progress. A boot waits for a free slot; a crashed holder's slot frees itself when its lease
 * runs out.
 *
 * @module
 */
import { type HeldLease, keys, type LeaseOptions, tryLease } from "../kv/mod.ts";
import {
  backendFacts,
  type Sandbox,
  type SandboxBackend,
  type SandboxSpec,
  SandboxUnavailableError,
} from "../sandbox/mod.ts";
import { sleep } from "../timing/mod.ts";

/** How boot slots behave. */
export interface BootSlotOptions {
  /** Boots at once across all processes. */
  readonly slots: number;
  /** Lease lifetime of a slot, renewed while the boot runs. */
  readonly ttlMs: number;
  /** Stops waiting (the job was cancelled): the wait throws the signal's reason. */
  readonly signal?: AbortSignal;
}

/**
 * Takes a free boot slot, waiting (with back-off up to 500 ms) while all are taken.
 *
 * @example
 * ```ts
 * import { acquireBootSlot } from "./boot_slots.ts";
 * const kv = await Deno.openKv(":memory:");
 * const slot = await acquireBootSlot(kv, "host:123/job_1", { slots: 4, ttlMs: 15_000 });
 * try {
 *   // … boot the sandbox …
 * } finally {
 *   await slot.release();
 * }
 * kv.close();
 * ```
 */
export async function acquireBootSlot(
  kv: Deno.Kv,
  holder: string,
  options: BootSlotOptions,
): Promise<HeldLease> {
  const lease: LeaseOptions = { ttlMs: options.ttlMs, waitMs: 0 };
  let delay = 20;
  for (;;) {
    options.signal?.throwIfAborted();
    // Start at a random slot so that waiters do not all contend for slot 0.
    const start = Math.floor(Math.random() * options.slots);
    for (let i = 0; i < options.slots; i++) {
      const slot = (start + i) % options.slots;
      const attempt = await tryLease(kv, keys.rolloutBootSlot(slot), holder, lease);
      if ("lease" in attempt) return attempt.lease;
    }
    await sleep(delay * (0.5 + Math.random()), options.signal);
    delay = Math.min(delay * 2, 500);
  }
}

/** Boots tried per sandbox before giving up (the E2B backend also retries inside). */
const BOOT_TRIES = 3;

/**
 * `backend` with its boots bounded: each holds one of the boot slots shared by every process on
 * the KV (`holder` names it in the slot's lease), and a boot the backend reports unavailable is
 * retried with backoff.
 *
 * @example
 * ```ts
 * import { fixtureRepo } from "../evaluate/mod.ts";
 * import { LocalBackend } from "../sandbox/mod.ts";
 * import { boundedBackend } from "./boot_slots.ts";
 * const kv = await Deno.openKv(":memory:");
 * const root = await Deno.makeTempDir();
 * const local = new LocalBackend({ root });
 * const backend = boundedBackend(kv, local, {
 *   holder: "host:123/job_1",
 *   slots: 4,
 *   ttlMs: 15_000,
 * });
 * const repo = { kind: "path" as const, path: await fixtureRepo("python_unittest", root) };
 * await backend.create({ repo, commit: "1bdf00de", network: false, lifetimeMs: 60_000 });
 * await local.close();
 * await Deno.remove(root, { recursive: true });
 * kv.close();
 * ```
 */
export function boundedBackend(
  kv: Deno.Kv,
  backend: SandboxBackend,
  options: Omit<BootSlotOptions, "signal"> & { readonly holder: string },
): SandboxBackend {
  const boot = async (spec: SandboxSpec): Promise<Sandbox> => {
    for (let tries = 1;; tries++) {
      const slot = await acquireBootSlot(kv, options.holder, { ...options, signal: spec.signal });
      try {
        return await backend.create(spec);
      } catch (error) {
        if (!(error instanceof SandboxUnavailableError) || tries >= BOOT_TRIES) throw error;
      } finally {
        await slot.release();
      }
      await sleep(1000 * 2 ** (tries - 1), spec.signal);
    }
  };
  return { ...backendFacts(backend), create: boot, close: () => backend.close() };
}
