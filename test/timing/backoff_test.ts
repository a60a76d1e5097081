import assert from "node:assert/strict";
import { backoffMs } from "../../lib/timing/mod.ts";

Deno.test("backoffMs() doubles with each attempt from its base, with jitter in [½, 1½) of it", () => {
  assert.deepEqual(
    [1, 2, 3, 4].map((attempt) => backoffMs(attempt, 100, 0.5)),
    [100, 200, 400, 800],
  );
  assert.equal(backoffMs(3, 100, 0), 200);
  assert.equal(backoffMs(3, 100, 0.999), 600);
  // Attempt 0 (or less) waits as the first.
  assert.equal(backoffMs(0, 100, 0.5), 100);
});

Deno.test("backoffMs() caps the exponential before the jitter, and jitters with Math.random by default", () => {
  assert.equal(backoffMs(30, 1000, 0.5, 60_000), 60_000);
  assert.equal(backoffMs(30, 1000, 0, 60_000), 30_000);
  for (let i = 0; i < 100; i++) {
    const wait = backoffMs(2, 1000);
    // [½, 1½) of 2000, rounded: 3000 itself when the jitter is within 1/4000 of its top.
    assert.ok(wait >= 1000 && wait <= 3000, `${wait}`);
  }
});
