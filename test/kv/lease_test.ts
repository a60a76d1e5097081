import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { acquireLease, type Lease, LeaseTimeoutError } from "../../lib/kv/mod.ts";

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
