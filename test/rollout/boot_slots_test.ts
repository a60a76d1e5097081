import assert from "node:assert/strict";
import { keys, type Lease } from "../../lib/kv/mod.ts";
import { acquireBootSlot } from "../../lib/rollout/mod.ts";

Deno.test("acquireBootSlot() hands out at most `slots` slots, and a freed one to a waiter", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const options = { slots: 2, ttlMs: 60_000 };
    const a = await acquireBootSlot(kv, "p1/a", options);
    const b = await acquireBootSlot(kv, "p2/b", options);
    let third = false;
    const waiting = acquireBootSlot(kv, "p3/c", options).then((lease) => {
      third = true;
      return lease;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(third, false, "two slots are taken: the third boot waits");
    await a.release();
    const c = await waiting;
    const holders: string[] = [];
    for await (const entry of kv.list<Lease>({ prefix: ["rollout_boot_slot"] })) {
      holders.push(entry.value.holder);
    }
    assert.deepEqual(holders.sort(), ["p2/b", "p3/c"]);
    await b.release();
    await c.release();
  } finally {
    kv.close();
  }
});

Deno.test("acquireBootSlot() takes over a slot whose holder died, and stops waiting on abort", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // A crashed process's slot: its lease ran out.
    await kv.set(keys.rolloutBootSlot(0), { holder: "dead/x", acquiredAt: 0, expiresAt: 1 });
    const slot = await acquireBootSlot(kv, "p1/a", { slots: 1, ttlMs: 60_000 });
    assert.equal((await kv.get<Lease>(keys.rolloutBootSlot(0))).value?.holder, "p1/a");
    const controller = new AbortController();
    const waiting = acquireBootSlot(kv, "p2/b", {
      slots: 1,
      ttlMs: 60_000,
      signal: controller.signal,
    });
    controller.abort(new Error("cancelled"));
    await assert.rejects(waiting, { message: "cancelled" });
    await slot.release();
  } finally {
    kv.close();
  }
});
