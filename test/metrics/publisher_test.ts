import assert from "node:assert/strict";
import FakeTimers from "@sinonjs/fake-timers";
import { METRICS_PUBLISH_MS, startPublishing } from "../../lib/metrics/mod.ts";

Deno.test("startPublishing() publishes at once, then every interval, skipping intervals while a write runs; stop() waits for it", async () => {
  const clock = FakeTimers.install({ toFake: ["setInterval", "clearInterval"] });
  try {
    const started: number[] = [];
    let release: () => void = () => {};
    const publishing = startPublishing(async () => {
      started.push(clock.now);
      await new Promise<void>((resolve) => release = resolve);
    });
    assert.deepEqual(started, [0]);
    // Two intervals pass while the first write hangs: both are skipped.
    clock.tick(METRICS_PUBLISH_MS * 2);
    release();
    await settle();
    assert.deepEqual(started, [0]);
    clock.tick(METRICS_PUBLISH_MS);
    assert.deepEqual(started, [0, METRICS_PUBLISH_MS * 3]);
    let stopped = false;
    const stopping = publishing.stop().then(() => stopped = true);
    await settle();
    assert.equal(stopped, false, "stop() waits for the write in flight");
    release();
    await stopping;
    clock.tick(METRICS_PUBLISH_MS * 3);
    assert.deepEqual(started, [0, METRICS_PUBLISH_MS * 3], "nothing after stop()");
  } finally {
    clock.uninstall();
  }
});

Deno.test("startPublishing() logs a failed write and tries again at the next interval", async () => {
  const clock = FakeTimers.install({ toFake: ["setInterval", "clearInterval"] });
  const errors: unknown[][] = [];
  const error = console.error;
  console.error = (...args: unknown[]) => void errors.push(args);
  try {
    let calls = 0;
    const publishing = startPublishing(() => {
      calls++;
      return calls === 1 ? Promise.reject(new Error("database is closed")) : Promise.resolve();
    }, 100);
    await settle();
    assert.equal(errors.length, 1);
    clock.tick(100);
    assert.equal(calls, 2);
    await publishing.stop();
    assert.equal(errors[0][0], "Publishing this worker's metrics failed:");
    assert.equal((errors[0][1] as Error).message, "database is closed");
    assert.equal(errors.length, 1);
  } finally {
    console.error = error;
    clock.uninstall();
  }
});

/** Lets every promise callback queued so far (and those they queue) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
