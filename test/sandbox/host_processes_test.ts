import assert from "node:assert/strict";
import { cpuMs, processAlive, residentMiB } from "../../lib/sandbox/mod.ts";

/** A pid no process has: above the kernel's limit. */
const NO_PID = 2 ** 22 + 1;

Deno.test("cpuMs counts this process's CPU time, and is null for no process", () => {
  const before = cpuMs(Deno.pid)!;
  assert.ok(before >= 0);
  // Busy work until the count moves by 20 ms (two kernel ticks), or give up after 10 s of it.
  const deadline = performance.now() + 10_000;
  let after = before;
  while (after < before + 20 && performance.now() < deadline) {
    for (let i = 0; i < 1e6; i++) Math.sqrt(i);
    after = cpuMs(Deno.pid)!;
  }
  assert.ok(after >= before + 20, `${before} → ${after} ms after 10 s of busy work`);
  assert.equal(cpuMs(NO_PID), null);
});

Deno.test("residentMiB reads this process's memory, and is null for no process", () => {
  assert.ok(residentMiB(Deno.pid)! > 10);
  assert.equal(residentMiB(NO_PID), null);
  assert.equal(processAlive(NO_PID), false);
  assert.equal(processAlive(Deno.pid), true);
});
