/**
 * Sandbox boots bounded across every gateway process that boots in one place: `slots` leases per
 * scope, one per boot in progress. A scope is where boots spend: a host's own machine for a
 * backend whose sandboxes run on the host (local sandboxes: each host has its own slots), or a
 * remote backend (E2B: every host shares its slots and its backoff). A boot waits for a free
 * slot; a crashed holder's slot frees itself when its lease runs out.
 *
 * @module
 */
import {
  commit,
  type HeldLease,
  keys,
  type LeaseOptions,
  type Store,
  tryLease,
} from "../kv/mod.ts";
import {
  backendFacts,
  type Sandbox,
  type SandboxBackend,
  type SandboxSpec,
  SandboxUnavailableError,
} from "../sandbox/mod.ts";
import { backoffMs, sleep } from "../timing/mod.ts";

/** How boot slots behave. */
export interface BootSlotOptions {
  /** Whose slots: see {@linkcode bootScope}. */
  readonly scope: string;
  /** Boots at once across all processes of the scope. */
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
 * const slot = await acquireBootSlot(kv, "host:123/job_1", {
 *   scope: "host:gw-a",
 *   slots: 4,
 *   ttlMs: 15_000,
 * });
 * try {
 *   // … boot the sandbox …
 * } finally {
 *   await slot.release();
 * }
 * kv.close();
 * ```
 */
export async function acquireBootSlot(
  kv: Store,
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
      const attempt = await tryLease(kv, keys.rolloutBootSlot(options.scope, slot), holder, lease);
      if ("lease" in attempt) return attempt.lease;
    }
    await sleep(delay * (0.5 + Math.random()), options.signal);
    delay = Math.min(delay * 2, 500);
  }
}

/** Boots tried per sandbox before giving up (the E2B backend also retries inside). */
const BOOT_TRIES = 3;

/** How a bounded backend boots, besides its slots. */
export interface BootPolicy {
  /** A boot not finished by then is given up (the sandbox killed if it comes later) and retried. */
  readonly bootMs?: number;
  /** The first backoff after a failed boot, doubled per failure of the same boot (1 s unset). */
  readonly backoffMs?: number;
}

/**
 * `backend` with its boots bounded: each holds one of the boot slots shared by every process on
 * the KV (`holder` names it in the slot's lease), gives up past `bootMs`, and a boot the backend
 * reports unavailable is retried; after a failed boot every process on the KV waits out a shared
 * backoff before it boots again, so a backend refusing boots (429s in a spike) is left alone.
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
 *   scope: "host:gw-a",
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
  kv: Store,
  backend: SandboxBackend,
  options: Omit<BootSlotOptions, "signal"> & BootPolicy & { readonly holder: string },
): SandboxBackend {
  const boot = async (spec: SandboxSpec): Promise<Sandbox> => {
    for (let tries = 1;; tries++) {
      await waitBootBackoff(kv, options.scope, spec.signal);
      const slot = await acquireBootSlot(kv, options.holder, { ...options, signal: spec.signal });
      try {
        return await timedBoot(backend, spec, options.bootMs);
      } catch (error) {
        if (!(error instanceof SandboxUnavailableError)) throw error;
        const delay = backoffMs(tries, options.backoffMs ?? 1000);
        await noteBootFailure(kv, options.scope, Math.min(delay, MAX_BOOT_BACKOFF_MS));
        if (tries >= BOOT_TRIES) throw error;
      } finally {
        await slot.release();
      }
    }
  };
  return { ...backendFacts(backend), create: boot, close: () => backend.close() };
}

/**
 * Whose boot slots and backoff a backend's boots take: the host's own (`HOST_ID`) when its
 * sandboxes run on the host, else the backend's, which every host shares.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LocalBackend } from "../sandbox/mod.ts";
 * import { bootScope } from "./boot_slots.ts";
 * assert.equal(bootScope(new LocalBackend({ root: "/tmp" }), "gw-a"), "host:gw-a");
 * ```
 */
export function bootScope(backend: SandboxBackend, hostId: string): string {
  return backend.capabilities.placement === "host" ? `host:${hostId}` : `backend:${backend.name}`;
}

/** Longest shared backoff after a failed boot. */
const MAX_BOOT_BACKOFF_MS = 60_000;

/** Pushes the boot backoff of `scope` to at least `delayMs` from now. */
async function noteBootFailure(kv: Store, scope: string, delayMs: number): Promise<void> {
  delayMs = Math.round(delayMs);
  const until = Date.now() + delayMs;
  const key = keys.rolloutBootBackoff(scope);
  for (;;) {
    const entry = await kv.get<number>(key);
    if ((entry.value ?? 0) >= until) return;
    const written = await commit(() =>
      kv.atomic().check(entry).set(key, until, { expireIn: delayMs + 60_000 })
    );
    if (written.ok) return;
  }
}

/** Waits until the boot backoff of `scope` is over. */
async function waitBootBackoff(kv: Store, scope: string, signal?: AbortSignal): Promise<void> {
  const until = (await kv.get<number>(keys.rolloutBootBackoff(scope))).value ?? 0;
  const wait = Math.min(until - Date.now(), MAX_BOOT_BACKOFF_MS);
  if (wait > 0) await sleep(wait, signal);
}

/**
 * `backend.create(spec)` given up after `bootMs` (a boot that hangs): the boot is aborted, and a
 * sandbox that comes after all is killed.
 *
 * @throws {SandboxUnavailableError} past `bootMs`; what the boot throws.
 */
async function timedBoot(
  backend: SandboxBackend,
  spec: SandboxSpec,
  bootMs: number | undefined,
): Promise<Sandbox> {
  if (bootMs === undefined) return await backend.create(spec);
  const controller = new AbortController();
  const leave = () => controller.abort(spec.signal?.reason);
  if (spec.signal?.aborted) leave();
  spec.signal?.addEventListener("abort", leave, { once: true });
  const timer = setTimeout(
    () =>
      controller.abort(new SandboxUnavailableError(`The sandbox did not boot within ${bootMs} ms`)),
    bootMs,
  );
  const creating = backend.create({ ...spec, signal: controller.signal });
  creating.then(async (sandbox) => {
    if (controller.signal.aborted) await sandbox.kill();
  }, () => {});
  const given = new Promise<never>((_, reject) => {
    const stop = () => reject(controller.signal.reason);
    if (controller.signal.aborted) stop();
    else controller.signal.addEventListener("abort", stop, { once: true });
  });
  try {
    return await Promise.race([creating, given]);
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener("abort", leave);
  }
}
