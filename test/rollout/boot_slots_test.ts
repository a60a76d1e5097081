import assert from "node:assert/strict";
import { keys, type Lease } from "../../lib/kv/mod.ts";
import { acquireBootSlot, bootScope, boundedBackend } from "../../lib/rollout/mod.ts";
import {
  LOCAL_CAPABILITIES,
  RepoError,
  type Sandbox,
  type SandboxBackend,
  type SandboxSpec,
  SandboxUnavailableError,
} from "../../lib/sandbox/mod.ts";

/** What the fake backends are asked to boot (they ignore it). */
const SPEC: SandboxSpec = {
  repo: { kind: "path", path: "/r" },
  commit: "HEAD",
  network: false,
  lifetimeMs: 1,
};

Deno.test("boundedBackend() boots at most `slots` sandboxes at once across processes, and every boot ends", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    let booting = 0;
    let most = 0;
    const backend: SandboxBackend = {
      name: "fake",
      capabilities: LOCAL_CAPABILITIES,
      create: async () => {
        most = Math.max(most, ++booting);
        await new Promise((resolve) => setTimeout(resolve, 20)); // a boot takes time
        booting--;
        return { id: "sbx" } as Sandbox;
      },
      close: () => Promise.resolve(),
    };
    // Two gateway processes on one KV, each with its own view of the same slots.
    const scope = "host:h";
    const a = boundedBackend(kv, backend, { holder: "p1", scope, slots: 2, ttlMs: 60_000 });
    const b = boundedBackend(kv, backend, { holder: "p2", scope, slots: 2, ttlMs: 60_000 });
    const boots = Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).create(SPEC));
    assert.equal((await Promise.all(boots)).length, 6);
    assert.equal(most, 2);
    const held: unknown[] = [];
    for await (const entry of kv.list({ prefix: ["rollout_boot_slot"] })) held.push(entry.key);
    assert.deepEqual(held, [], "every slot was released");
  } finally {
    kv.close();
  }
});

Deno.test("local sandboxes take their own host's boot slots; a remote backend's are every host's", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const most = new Map<string, number>();
    const backendOf = (placement: "host" | "remote"): SandboxBackend => {
      let booting = 0;
      return {
        name: placement === "host" ? "local" : "remote",
        capabilities: { ...LOCAL_CAPABILITIES, placement },
        create: async () => {
          most.set(placement, Math.max(most.get(placement) ?? 0, ++booting));
          await new Promise((resolve) => setTimeout(resolve, 20));
          booting--;
          return { id: "sbx" } as Sandbox;
        },
        close: () => Promise.resolve(),
      };
    };
    for (const placement of ["host", "remote"] as const) {
      const backend = backendOf(placement);
      // Two hosts on one store, two boots at once each.
      const hosts = ["gw-a", "gw-b"].map((host) =>
        boundedBackend(kv, backend, {
          holder: `${host}:1`,
          scope: bootScope(backend, host),
          slots: 2,
          ttlMs: 60_000,
        })
      );
      await Promise.all(Array.from({ length: 8 }, (_, i) => hosts[i % 2].create(SPEC)));
    }
    assert.deepEqual(Object.fromEntries(most), { host: 4, remote: 2 });
  } finally {
    kv.close();
  }
});

Deno.test("acquireBootSlot() takes over a slot whose holder died, and stops waiting on abort", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // A crashed process's slot: its lease ran out.
    const scope = "host:h";
    const dead = { holder: "dead/x", acquiredAt: 0, expiresAt: 1 };
    await kv.set(keys.rolloutBootSlot(scope, 0), dead);
    const slot = await acquireBootSlot(kv, "p1/a", { scope, slots: 1, ttlMs: 60_000 });
    assert.equal((await kv.get<Lease>(keys.rolloutBootSlot(scope, 0))).value?.holder, "p1/a");
    const controller = new AbortController();
    const waiting = acquireBootSlot(kv, "p2/b", {
      scope,
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

Deno.test("boundedBackend() retries a boot the backend reports unavailable, not a bad repository", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const failures: Error[] = [new SandboxUnavailableError("no capacity")];
    let calls = 0;
    const backend: SandboxBackend = {
      name: "fake",
      capabilities: LOCAL_CAPABILITIES,
      create: () => {
        calls++;
        const failure = failures.shift();
        return failure ? Promise.reject(failure) : Promise.resolve({ id: "sbx" } as Sandbox);
      },
      close: () => Promise.resolve(),
    };
    const bounded = boundedBackend(kv, backend, {
      holder: "p1",
      scope: "host:h",
      slots: 1,
      ttlMs: 60_000,
    });
    assert.equal((await bounded.create(SPEC)).id, "sbx");
    assert.equal(calls, 2);
    failures.push(new RepoError("no such commit"));
    await assert.rejects(bounded.create(SPEC), RepoError);
    assert.equal(calls, 3, "a bad repository is not retried");
  } finally {
    kv.close();
  }
});
