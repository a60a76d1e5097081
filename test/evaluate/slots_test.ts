import assert from "node:assert/strict";
import { Slots } from "../../lib/evaluate/mod.ts";

/** A promise with its resolver, for work the test finishes by hand. */
function gate() {
  return Promise.withResolvers<void>();
}

Deno.test("Slots runs at most its size at once and lets the rest in, in arrival order", async () => {
  const slots = new Slots(2);
  const gates = [gate(), gate(), gate(), gate()];
  const started: number[] = [];
  const runs = gates.map((g, i) =>
    slots.run(async () => {
      started.push(i);
      await g.promise;
      return i;
    })
  );
  await Promise.resolve();
  assert.deepEqual(started, [0, 1]);
  assert.equal(slots.waiting, 2);
  gates[1].resolve();
  await runs[1];
  await Promise.resolve();
  assert.deepEqual(started, [0, 1, 2]);
  gates[0].resolve();
  gates[2].resolve();
  gates[3].resolve();
  assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3]);
  assert.deepEqual(started, [0, 1, 2, 3]);
  assert.equal(slots.waiting, 0);
});

Deno.test("Slots frees the slot of work that throws", async () => {
  const slots = new Slots(1);
  await assert.rejects(slots.run(() => Promise.reject(new Error("boom"))), { message: "boom" });
  assert.equal(await slots.run(() => Promise.resolve("next")), "next");
});

Deno.test("Slots drops a waiter whose signal aborts, and refuses one already aborted", async () => {
  const slots = new Slots(1);
  const held = gate();
  const first = slots.run(() => held.promise);
  const controller = new AbortController();
  let ran = false;
  const waiter = slots.run(() => {
    ran = true;
    return Promise.resolve();
  }, controller.signal);
  assert.equal(slots.waiting, 1);
  controller.abort(new Error("caller left"));
  await assert.rejects(waiter, { message: "caller left" });
  assert.equal(slots.waiting, 0);
  await assert.rejects(slots.run(() => Promise.resolve(), controller.signal), {
    message: "caller left",
  });
  held.resolve();
  await first;
  assert.equal(ran, false);
  assert.equal(await slots.run(() => Promise.resolve(7)), 7);
});
