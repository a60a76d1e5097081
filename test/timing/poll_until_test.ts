import assert from "node:assert/strict";
import { pollUntil } from "../../lib/timing/mod.ts";

Deno.test("pollUntil() resolves true once the condition holds, checking it at least once", async () => {
  let checks = 0;
  assert.equal(await pollUntil(() => ++checks === 4, { timeoutMs: 60_000, intervalMs: 0 }), true);
  assert.equal(checks, 4);
  checks = 0;
  assert.equal(await pollUntil(() => (checks++, true), { timeoutMs: 0, intervalMs: 0 }), true);
  assert.equal(checks, 1, "a zero timeout still checks once");
});

Deno.test("pollUntil() resolves false at its deadline, on the clock it is given", async () => {
  let clock = 1000;
  let checks = 0;
  const held = await pollUntil(() => {
    checks++;
    clock += 10; // each check takes 10 ms of the fake clock
    return false;
  }, { timeoutMs: 35, intervalMs: 0, now: () => clock });
  assert.equal(held, false);
  assert.equal(checks, 4, "checked at 0, 10, 20 and 30 ms; the deadline passed after the last");
});

Deno.test("pollUntil() stops waiting when its signal aborts", async () => {
  const controller = new AbortController();
  controller.abort(new Error("client left"));
  await assert.rejects(
    pollUntil(() => false, { timeoutMs: 60_000, intervalMs: 60_000, signal: controller.signal }),
    { message: "client left" },
  );
});
