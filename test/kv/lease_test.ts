import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import {
  acquireLease,
  handOverLease,
  type Lease,
  leaseIfUnchanged,
  LeaseTimeoutError,
  StoreUnavailableError,
} from "../../lib/kv/mod.ts";
import { CATALOGUE, createMetrics, workerFamilies } from "../../lib/metrics/mod.ts";
import { nonZero } from "../_prometheus.ts";

const KEY = ["lease", "s1"];

/** A clock that only moves when the code under test sleeps. */
function fakeClock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    sleep: (ms: number) => {
      now += ms;
      return Promise.resolve();
    },
    advance: (ms: number) => void (now += ms),
  };
}

Deno.test("acquireLease() takes a free lease with its holder and expiry", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  const lease = await acquireLease(kv, KEY, "p1/r1", { ttlMs: 3000, waitMs: 1000, ...clock });
  try {
    const stored = await kv.get<Lease>(KEY);
    assert.deepEqual(stored.value, {
      holder: "p1/r1",
      acquiredAt: 1_000_000,
      expiresAt: 1_003_000,
    });
    assert.equal(lease.entry.versionstamp, stored.versionstamp);
    assert.equal(lease.held, true);
  } finally {
    await lease.release();
    kv.close();
  }
});

Deno.test("acquireLease() waits for a held lease, then gives up with LeaseTimeoutError", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  const first = await acquireLease(kv, KEY, "p1/r1", { ttlMs: 60_000, waitMs: 1000, ...clock });
  try {
    const before = await kv.get<Lease>(KEY);
    await assert.rejects(
      acquireLease(kv, KEY, "p2/r2", { ttlMs: 60_000, waitMs: 1000, ...clock }),
      (error: unknown) => error instanceof LeaseTimeoutError && error.holder === "p1/r1",
    );
    assert.equal(clock.now() - 1_000_000 >= 1000, true, "it waited the whole bound");
    assert.equal((await kv.get<Lease>(KEY)).versionstamp, before.versionstamp, "nothing written");
  } finally {
    await first.release();
    kv.close();
  }
});

Deno.test("acquireLease() takes over a lease whose holder let it run out", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  // A holder that died: its lease is never renewed or released.
  await kv.set(KEY, { holder: "dead/r0", acquiredAt: 0, expiresAt: clock.now() + 500 });
  const lease = await acquireLease(kv, KEY, "p2/r2", { ttlMs: 3000, waitMs: 10_000, ...clock });
  try {
    assert.equal(lease.entry.value.holder, "p2/r2");
    assert.ok(clock.now() >= 1_000_500, "taken only once the old lease ran out");
    assert.ok(clock.now() < 1_000_500 + 500, "and soon after");
  } finally {
    await lease.release();
    kv.close();
  }
});

Deno.test("HeldLease.release() frees the lease for the next holder at once", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  const first = await acquireLease(kv, KEY, "p1/r1", { ttlMs: 60_000, waitMs: 0, ...clock });
  await first.release();
  assert.equal((await kv.get(KEY)).value, null);
  const second = await acquireLease(kv, KEY, "p2/r2", { ttlMs: 60_000, waitMs: 0, ...clock });
  await second.release();
  kv.close();
});

Deno.test("a held lease is renewed every third of its time to live", async () => {
  const kv = await Deno.openKv(":memory:");
  const timers = FakeTimers.install({ toFake: ["setInterval", "clearInterval"] });
  const clock = fakeClock();
  try {
    const lease = await acquireLease(kv, KEY, "p1/r1", { ttlMs: 3000, waitMs: 0, ...clock });
    clock.advance(1000);
    await timers.tickAsync(1000);
    await lease.pause();
    const stored = await kv.get<Lease>(KEY);
    assert.equal(stored.value?.expiresAt, 1_001_000 + 3000);
    assert.equal(lease.entry.versionstamp, stored.versionstamp);
    await lease.release();
  } finally {
    timers.uninstall();
    kv.close();
  }
});

Deno.test("a store that stops answering fails no renewal and no release: the lease stands, then runs out", async () => {
  const kv = await Deno.openKv(":memory:");
  const timers = FakeTimers.install({ toFake: ["setInterval", "clearInterval"] });
  const clock = fakeClock();
  try {
    const lease = await acquireLease(kv, KEY, "p1/r1", { ttlMs: 3000, waitMs: 0, ...clock });
    const taken = lease.entry;
    // The database goes away: every commit throws, as the PostgreSQL store's do.
    const atomic = kv.atomic.bind(kv);
    kv.atomic = () => {
      const op = atomic();
      op.commit = () => Promise.reject(new StoreUnavailableError(new Error("ECONNREFUSED")));
      return op;
    };
    clock.advance(1000);
    await timers.tickAsync(2000); // two renewals fail, and reject nothing
    await lease.pause();
    assert.equal(lease.held, true, "a renewal that got no answer does not give the lease up");
    assert.deepEqual(lease.entry, taken);
    await lease.release(); // resolves: the lease is left to run out
    kv.atomic = atomic;
    assert.deepEqual((await kv.get<Lease>(KEY)).value, taken.value);
  } finally {
    timers.uninstall();
    kv.close();
  }
});

Deno.test("a lease taken over by another holder is reported lost and not deleted on release", async () => {
  const kv = await Deno.openKv(":memory:");
  const timers = FakeTimers.install({ toFake: ["setInterval", "clearInterval"] });
  const clock = fakeClock();
  try {
    const lease = await acquireLease(kv, KEY, "p1/r1", { ttlMs: 3000, waitMs: 0, ...clock });
    await kv.set(KEY, { holder: "p2/r2", acquiredAt: 0, expiresAt: clock.now() + 9000 });
    await timers.tickAsync(1000);
    await lease.pause();
    assert.equal(lease.held, false);
    await lease.release();
    assert.equal((await kv.get<Lease>(KEY)).value?.holder, "p2/r2");
  } finally {
    timers.uninstall();
    kv.close();
  }
});

Deno.test("acquireLease() stops waiting when the caller's signal aborts", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  const first = await acquireLease(kv, KEY, "p1/r1", { ttlMs: 60_000, waitMs: 60_000, ...clock });
  try {
    const controller = new AbortController();
    let sleeps = 0;
    const waiting = acquireLease(kv, KEY, "p2/r2", {
      ttlMs: 60_000,
      waitMs: 60_000,
      now: clock.now,
      sleep: (ms) => {
        if (++sleeps === 3) controller.abort(new Error("client left"));
        return clock.sleep(ms);
      },
      signal: controller.signal,
    });
    await assert.rejects(waiting, /client left/);
    assert.equal(sleeps, 3);
    assert.equal((await kv.get<Lease>(KEY)).value?.holder, "p1/r1");
  } finally {
    await first.release();
    kv.close();
  }
});

Deno.test("acquireLease() counts a wait once, by lease, with how long it lasted; a free lease is no wait", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  const metrics = createMetrics();
  const options = { ttlMs: 60_000, waitMs: 1000, ...clock, metrics };
  const first = await acquireLease(kv, KEY, "p1/r1", options);
  try {
    assert.deepEqual(nonZero(metrics), {});
    const started = clock.now();
    await assert.rejects(acquireLease(kv, KEY, "p2/r2", options), LeaseTimeoutError);
    const waited = clock.now() - started;
    // A chain's lease whose holder died: taken once it runs out, 500 ms later.
    const chainKey = ["chain_lease", "s1", "c1"];
    await kv.set(chainKey, { holder: "dead/r0", acquiredAt: 0, expiresAt: clock.now() + 500 });
    const chainStart = clock.now();
    const chain = await acquireLease(kv, chainKey, "p2/r2", options);
    const chainWaited = clock.now() - chainStart;
    await chain.release();
    assert.deepEqual(nonZero(metrics), {
      'rollout_gateway_lease_waits_total{lease="session"}': 1,
      'rollout_gateway_lease_waits_total{lease="chain"}': 1,
      'rollout_gateway_lease_wait_seconds_count{lease="session"}': 1,
      'rollout_gateway_lease_wait_seconds_count{lease="chain"}': 1,
    });
    const family = workerFamilies(metrics.registry, [{
      host: "h",
      worker: 0,
      values: metrics.registry.values,
    }])
      .find((family) => family.name === CATALOGUE.leaseWaitSeconds.name)!;
    const sums = family.series.map((series) => "sum" in series ? series.sum : NaN);
    assert.deepEqual(sums, [waited / 1000, chainWaited / 1000, 0]);
    assert.ok(waited >= 1000 && chainWaited >= 500);
  } finally {
    await first.release();
    kv.close();
  }
});

Deno.test("leaseIfUnchanged() takes a free lease only while what the caller read still holds", async () => {
  const kv = await Deno.openKv(":memory:");
  const clock = fakeClock();
  const options = { ttlMs: 3000, waitMs: 1000, ...clock };
  await kv.set(["chain", "c0"], "v1");
  const read = await kv.get(["chain", "c0"]);
  const absent = { key: ["lease", "s1"], versionstamp: null };
  try {
    // Each way the commit can fail writes nothing.
    await kv.set(["chain", "c0"], "v2");
    assert.equal(await leaseIfUnchanged(kv, ["chain_lease", "c0"], "p1/r1", options, [read]), null);
    assert.equal((await kv.get(["chain_lease", "c0"])).versionstamp, null);
    const fresh = await kv.get(["chain", "c0"]);
    await kv.set(["lease", "s1"], { holder: "p2/r2", acquiredAt: 0, expiresAt: 2_000_000 });
    assert.equal(
      await leaseIfUnchanged(kv, ["chain_lease", "c0"], "p1/r1", options, [fresh, absent]),
      null,
    );
    await kv.delete(["lease", "s1"]);
    const held = await acquireLease(kv, ["chain_lease", "c0"], "p3/r3", options);
    assert.equal(
      await leaseIfUnchanged(kv, ["chain_lease", "c0"], "p1/r1", options, [fresh]),
      null,
    );
    assert.equal((await kv.get<Lease>(["chain_lease", "c0"])).value?.holder, "p3/r3");
    await held.release();
    // Nothing moved and nobody holds it: taken, with its holder and expiry.
    const lease = await leaseIfUnchanged(kv, ["chain_lease", "c0"], "p1/r1", options, [
      fresh,
      absent,
    ]);
    assert.ok(lease);
    const stored = await kv.get<Lease>(["chain_lease", "c0"]);
    assert.deepEqual(stored.value, {
      holder: "p1/r1",
      acquiredAt: 1_000_000,
      expiresAt: 1_003_000,
    });
    assert.equal(lease.entry.versionstamp, stored.versionstamp);
    await lease.release();
    assert.equal((await kv.get(["chain_lease", "c0"])).versionstamp, null);
  } finally {
    kv.close();
  }
});

Deno.test("handOverLease() trades one lease for another in one commit, or keeps the first", async () => {
  const kv = await Deno.openKv(":memory:");
  const options = { ttlMs: 3000, waitMs: 1000, ...fakeClock() };
  const session = await acquireLease(kv, KEY, "p1/r1", options);
  const other = await acquireLease(kv, ["chain_lease", "c0"], "p2/r2", options);
  try {
    // The chain's lease is held: the session's stays with its holder.
    assert.equal(await handOverLease(kv, session, ["chain_lease", "c0"], "p1/r1", options), null);
    assert.equal((await kv.get<Lease>(KEY)).value?.holder, "p1/r1");
    await other.release();
    const chain = await handOverLease(kv, session, ["chain_lease", "c0"], "p1/r1", options);
    assert.ok(chain);
    assert.equal((await kv.get(KEY)).versionstamp, null);
    assert.equal(session.held, false);
    assert.equal((await kv.get<Lease>(["chain_lease", "c0"])).value?.holder, "p1/r1");
    await chain.release();
  } finally {
    await session.release();
    kv.close();
  }
});
