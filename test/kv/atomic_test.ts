import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { commit } from "../../lib/kv/atomic.ts";
import { createMetrics } from "../../lib/metrics/mod.ts";
import { nonZero } from "../_prometheus.ts";

/** An operation whose commit throws `errors` in turn, then commits `op` for real. */
function flaky(op: () => Deno.AtomicOperation, errors: Error[]) {
  const state = { builds: 0 };
  const build = () => {
    state.builds++;
    const error = errors.shift();
    if (!error) return op();
    return { commit: () => Promise.reject(error) } as unknown as Deno.AtomicOperation;
  };
  return { build, state };
}

Deno.test("commit() commits the operation and resolves to its result", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const result = await commit(() => kv.atomic().set(["k"], 1));
    assert.equal(result.ok, true);
    const entry = await kv.get(["k"]);
    assert.equal(entry.value, 1);
    assert.equal(entry.versionstamp, (result as Deno.KvCommitResult).versionstamp);
  } finally {
    kv.close();
  }
});

Deno.test("commit() resolves to ok: false when a check fails, without retrying", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await kv.set(["k"], 1);
    let builds = 0;
    const result = await commit(() => {
      builds++;
      return kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], 2);
    });
    assert.equal(result.ok, false);
    assert.equal(builds, 1);
    assert.equal((await kv.get(["k"])).value, 1);
  } finally {
    kv.close();
  }
});

Deno.test("commit() rebuilds and retries while the database is locked", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const locked = () => new TypeError("database is locked");
    const { build, state } = flaky(
      () => kv.atomic().check({ key: ["k"], versionstamp: null }).set(["k"], "v"),
      [locked(), locked(), locked()],
    );
    const result = await commit(build);
    assert.equal(result.ok, true);
    assert.equal(state.builds, 4);
    assert.equal((await kv.get(["k"])).value, "v");
  } finally {
    kv.close();
  }
});

Deno.test("commit() rethrows an error other than a locked database at once", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const { build, state } = flaky(() => kv.atomic().set(["k"], 1), [
      new TypeError("Value too large (max 65536 bytes)"),
    ]);
    await assert.rejects(() => commit(build), { name: "TypeError", message: /Value too large/ });
    assert.equal(state.builds, 1);
    assert.equal((await kv.get(["k"])).value, null);
  } finally {
    kv.close();
  }
});

Deno.test("commit() rethrows a locked database after its last try", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const errors = Array.from({ length: 60 }, () => new TypeError("database is locked"));
    const { build, state } = flaky(() => kv.atomic().set(["k"], 1), errors);
    const clock = FakeTimers.install({ toFake: ["setTimeout"] });
    try {
      const committing = assert.rejects(commit(build), /database is locked/);
      await clock.runAllAsync();
      await committing;
    } finally {
      clock.uninstall();
    }
    assert.ok(state.builds > 1 && state.builds < 60, `${state.builds} builds`);
    assert.equal((await kv.get(["k"])).value, null);
  } finally {
    kv.close();
  }
});

Deno.test("commit() counts each retry of a locked database, and nothing for a failed check", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const metrics = createMetrics();
    const locked = () => new TypeError("database is locked");
    const { build } = flaky(() => kv.atomic().set(["k"], "v"), [locked(), locked()]);
    assert.equal((await commit(build, metrics)).ok, true);
    await kv.set(["taken"], 1);
    const failed = await commit(
      () => kv.atomic().check({ key: ["taken"], versionstamp: null }).set(["taken"], 2),
      metrics,
    );
    assert.equal(failed.ok, false);
    assert.deepEqual(nonZero(metrics), { "rollout_gateway_kv_commit_retries_total{}": 2 });
  } finally {
    kv.close();
  }
});
