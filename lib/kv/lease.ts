/**
 * Leases: a lock in Deno KV that any process sharing the KV respects. The value holds its
 * holder and its own `expiresAt` (KV's `expireIn` is lazy), it is taken with an atomic check,
 * renewed while its holder works, and simply runs out when its holder dies.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import { sleep } from "../timing/mod.ts";
import { commit } from "./atomic.ts";
import { parseKey } from "./keys.ts";
import type { Store } from "./store.ts";

/** A lease as stored. */
export interface Lease {
  /** Who holds it: a process id and the request it serves. */
  readonly holder: string;
  readonly acquiredAt: number;
  /** Milliseconds since the epoch after which anyone may take the lease. */
  readonly expiresAt: number;
}

/** A waiter gave up: someone else held the lease longer than the wait allowed. */
export class LeaseTimeoutError extends Error implements CodedError {
  readonly code = "lease_timeout" as const;
  constructor(readonly holder: string, waitedMs: number) {
    super(`Session is busy: another request has held it for ${Math.round(waitedMs)} ms`);
    this.name = "LeaseTimeoutError";
  }
}

/** How leases behave. */
export interface LeaseOptions {
  /** How long a lease lasts without renewal. It is renewed every third of this. */
  readonly ttlMs: number;
  /** How long a waiter tries before {@linkcode LeaseTimeoutError}. */
  readonly waitMs: number;
  /** The clock (tests pass a fake one). */
  readonly now?: () => number;
  /** Sleeps between attempts (tests pass a fake one). */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Stops waiting (the caller left): the wait throws the signal's reason. */
  readonly signal?: AbortSignal;
  /** Counts waits and commit retries. */
  readonly metrics?: GatewayMetrics;
}

/** A lease this process holds. */
export interface HeldLease {
  /** The lease entry as last written: a commit that must still hold the lease checks it. */
  readonly entry: Deno.KvEntry<Lease>;
  /** False once a renewal found the lease taken over (it had run out). */
  readonly held: boolean;
  /** Stops renewing, waiting for a renewal in flight, so {@linkcode entry} stays current. */
  pause(): Promise<void>;
  /**
   * Stops renewing and deletes the lease if it is still this holder's (a store that does not
   * answer leaves it to run out).
   */
  release(): Promise<void>;
  /** Records that a commit of the holder's released the lease already (see `commitTurn`). */
  released(): void;
}

/**
 * Takes the lease at `key`, waiting with bounded exponential back-off while someone else holds
 * an unexpired one, and keeps renewing it until released.
 *
 * @example
 * ```ts
 * import { keys } from "./keys.ts";
 * import { acquireLease } from "./lease.ts";
 * const kv = await Deno.openKv(":memory:");
 * const lease = await acquireLease(kv, keys.lease("sess_1"), "pid-1/req-1", {
 *   ttlMs: 15_000,
 *   waitMs: 30_000,
 * });
 * try {
 *   // … the work the lease guards …
 * } finally {
 *   await lease.release();
 * }
 * kv.close();
 * ```
 * @throws {LeaseTimeoutError} when the wait runs out.
 */
export async function acquireLease(
  kv: Store,
  key: Deno.KvKey,
  holder: string,
  options: LeaseOptions,
): Promise<HeldLease> {
  const now = options.now ?? Date.now;
  const pause = options.sleep ?? sleep;
  const started = now();
  const first = await tryLease(kv, key, holder, options);
  if ("lease" in first) return first.lease;
  // Held by someone else: a wait, counted once with its length however it ends.
  const kind = leaseKind(key);
  options.metrics?.leaseWaits.inc(kind);
  try {
    let current = first.holder;
    let delay = 5;
    for (;;) {
      const waited = now() - started;
      if (waited >= options.waitMs) throw new LeaseTimeoutError(current, waited);
      options.signal?.throwIfAborted();
      await pause(Math.min(delay * (0.5 + Math.random()), options.waitMs - waited), options.signal);
      delay = Math.min(delay * 2, 250);
      const attempt = await tryLease(kv, key, holder, options);
      if ("lease" in attempt) return attempt.lease;
      current = attempt.holder;
    }
  } finally {
    options.metrics?.leaseWaitSeconds.observe((now() - started) / 1000, kind);
  }
}

/** Which lease `key` is, as the wait metrics name it. */
function leaseKind(key: Deno.KvKey): "session" | "chain" | "other" {
  const kind = parseKey(key).kind;
  return kind === "lease" ? "session" : kind === "chain_lease" ? "chain" : "other";
}

/**
 * One attempt at the lease at `key`: it is taken when free or run out, else the current holder
 * is named. Never waits.
 */
export async function tryLease(
  kv: Store,
  key: Deno.KvKey,
  holder: string,
  options: LeaseOptions,
): Promise<{ lease: HeldLease } | { holder: string }> {
  const now = options.now ?? Date.now;
  // Most of the time nobody holds it: try to create it before reading it.
  let current: Deno.KvEntryMaybe<Lease> = { key, value: null, versionstamp: null };
  for (let first = true;; first = false) {
    if (!first) current = await kv.get<Lease>(key);
    if (current.value !== null && current.value.expiresAt > now()) {
      return { holder: current.value.holder };
    }
    const taken = now();
    const lease: Lease = { holder, acquiredAt: taken, expiresAt: taken + options.ttlMs };
    const result = await commit(
      () => kv.atomic().check(current).set(key, lease),
      options.metrics,
    );
    if (result.ok) {
      const entry = { key, value: lease, versionstamp: result.versionstamp };
      return { lease: holdLease(kv, key, entry, options) };
    }
    if (!first) return { holder: (await kv.get<Lease>(key)).value?.holder ?? "" };
  }
}

/**
 * Trades `from` for the free lease at `key` in one commit, if `checks` (entries the caller read)
 * still hold: the holder never has neither. Resolves to `null`, holding `from` still, when `key`
 * is taken (or left over by a dead holder: {@linkcode tryLease} handles that) or a check failed.
 */
export async function handOverLease(
  kv: Store,
  from: HeldLease,
  key: Deno.KvKey,
  holder: string,
  options: LeaseOptions,
  checks: readonly Deno.AtomicCheck[] = [],
): Promise<HeldLease | null> {
  await from.pause();
  const taken = await leaseIfUnchanged(kv, key, holder, options, [from.entry, ...checks], [
    from.entry.key,
  ]);
  if (taken) from.released();
  return taken;
}

/**
 * Takes the free lease at `key` in one commit, if `checks` (entries the caller read, or keys it
 * read absent) still hold, deleting `deletes` in the same commit. Resolves to `null`, writing
 * nothing, when `key` is taken (or left over by a dead holder: {@linkcode tryLease} handles
 * that) or a check failed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { leaseIfUnchanged } from "./lease.ts";
 * const kv = await Deno.openKv(":memory:");
 * const options = { ttlMs: 15_000, waitMs: 30_000 };
 * const read = await kv.get(["chain", "c0"]);
 * const lease = await leaseIfUnchanged(kv, ["chain_lease", "c0"], "pid-1/req-1", options, [read]);
 * assert.ok(lease?.held);
 * await lease.release();
 * await kv.set(["chain", "c0"], "moved");
 * const again = await leaseIfUnchanged(kv, ["chain_lease", "c0"], "pid-1/req-2", options, [read]);
 * assert.equal(again, null); // the chain moved since it was read
 * kv.close();
 * ```
 */
export async function leaseIfUnchanged(
  kv: Store,
  key: Deno.KvKey,
  holder: string,
  options: LeaseOptions,
  checks: readonly Deno.AtomicCheck[],
  deletes: readonly Deno.KvKey[] = [],
): Promise<HeldLease | null> {
  const taken = (options.now ?? Date.now)();
  const lease: Lease = { holder, acquiredAt: taken, expiresAt: taken + options.ttlMs };
  const result = await commit(() => {
    const op = kv.atomic().check({ key, versionstamp: null });
    for (const check of checks) op.check(check);
    for (const gone of deletes) op.delete(gone);
    return op.set(key, lease);
  }, options.metrics);
  if (!result.ok) return null;
  return holdLease(kv, key, { key, value: lease, versionstamp: result.versionstamp }, options);
}

/** True while anyone holds an unexpired lease under `prefix`. */
export async function anyLeaseHeld(
  kv: Store,
  prefix: Deno.KvKey,
  now = Date.now(),
): Promise<boolean> {
  for await (const entry of kv.list<Lease>({ prefix })) {
    if (entry.value.expiresAt > now) return true;
  }
  return false;
}

function holdLease(
  kv: Store,
  key: Deno.KvKey,
  first: Deno.KvEntry<Lease>,
  options: LeaseOptions,
): HeldLease {
  const now = options.now ?? Date.now;
  let entry = first;
  let held = true;
  let renewing: Promise<void> = Promise.resolve();
  const renew = async () => {
    const next: Lease = { ...entry.value, expiresAt: now() + options.ttlMs };
    try {
      const result = await commit(() => kv.atomic().check(entry).set(key, next), options.metrics);
      if (result.ok) entry = { key, value: next, versionstamp: result.versionstamp };
      else held = false;
    } catch {
      // The store did not answer (a database restarting): the lease stands as it was, renewed at
      // the next interval if the store is back; the holder's commit checks it either way.
    }
  };
  const timer = setInterval(() => {
    renewing = renewing.then(renew);
  }, Math.max(1, Math.floor(options.ttlMs / 3)));
  const pause = async () => {
    clearInterval(timer);
    await renewing;
  };
  return {
    get entry() {
      return entry;
    },
    get held() {
      return held;
    },
    pause,
    release: async () => {
      await pause();
      // A store that does not answer (a database restarting) leaves the lease to run out.
      if (held) {
        await commit(() => kv.atomic().check(entry).delete(key), options.metrics).catch(() => {});
      }
      held = false;
    },
    released: () => {
      clearInterval(timer);
      held = false;
    },
  };
}
