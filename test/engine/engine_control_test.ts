/**
 * Engine controls fanned out to every worker: the configured list, a router's list (SMG's
 * `GET /workers` and the legacy `GET /list_workers`), or the engine URL itself; a worker that
 * fails is named, after every worker was tried.
 */
import assert from "node:assert/strict";
import { EngineControl, EngineControlError } from "../../lib/engine/mod.ts";
import { type ScriptedEngine, startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";

/** Two scripted engine workers behind a router that lists them at `listing`, for one test. */
async function withRouter(
  listing: (urls: string[]) => { path: string; body: unknown } | null,
  run: (router: string, workers: ScriptedEngine[], routed: string[]) => Promise<void>,
) {
  const tokenizer = await qwen3();
  const workers = [
    await startScriptedEngine({ tokenizer }),
    await startScriptedEngine({ tokenizer }),
  ];
  const listed = listing(workers.map((worker) => worker.url));
  const routed: string[] = [];
  const router = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = new URL(request.url).pathname;
    routed.push(path);
    if (listed && request.method === "GET" && path === listed.path) {
      return Response.json(listed.body);
    }
    return Response.json({ error: "not found" }, { status: 404 });
  });
  try {
    await run(`http://127.0.0.1:${router.addr.port}`, workers, routed);
  } finally {
    await router.shutdown();
    for (const worker of workers) await worker.close();
  }
}

const OPTIONS = { workers: null, timeoutMs: 5_000 };

for (
  const [name, listing] of [
    [
      "SMG's GET /workers",
      (urls: string[]) => ({
        path: "/workers",
        body: { workers: urls.map((url) => ({ url, worker_type: "regular" })) },
      }),
    ],
    [
      "the legacy GET /list_workers",
      (urls: string[]) => ({ path: "/list_workers", body: { urls: urls.map((url) => `${url}/`) } }),
    ],
  ] as const
) {
  Deno.test(`pause, version and continue reach every worker a router lists (${name})`, async () => {
    await withRouter(listing, async (router, workers, routed) => {
      const control = new EngineControl(router, OPTIONS);
      assert.deepEqual(await control.workers(), workers.map((worker) => worker.url));
      const paused = await control.pause("retract");
      assert.deepEqual(paused.map((answer) => answer.url), workers.map((worker) => worker.url));
      assert.deepEqual(workers.map((worker) => worker.paused()), ["retract", "retract"]);
      await control.setWeightVersion("7", false);
      assert.deepEqual(
        await control.weightVersions(),
        workers.map((worker) => ({ url: worker.url, version: "7" })),
      );
      await control.continue();
      assert.deepEqual(workers.map((worker) => worker.paused()), [null, null]);
      assert.ok(
        routed.every((path) => path === "/workers" || path === "/list_workers"),
        `only listings reached the router: ${routed}`,
      );
    });
  });
}

Deno.test("an engine URL that lists no workers is itself the one worker", async () => {
  await withRouter(() => null, async (router, [worker]) => {
    const direct = new EngineControl(worker.url, OPTIONS);
    assert.deepEqual(await direct.workers(), [worker.url]);
    await direct.pause("in_place");
    assert.equal(worker.paused(), "in_place");
    await direct.continue();
    // A router listing nobody: the URL itself, which then fails to pause, naming itself.
    const bare = new EngineControl(router, OPTIONS);
    assert.deepEqual(await bare.workers(), [router]);
    await assert.rejects(bare.pause("abort"), (error: unknown) => {
      assert.ok(error instanceof EngineControlError);
      assert.equal(error.code, "engine_control_failed");
      assert.deepEqual(error.failures.map((f) => f.url), [router]);
      assert.match(error.message, /HTTP 404/);
      return true;
    });
  });
});

Deno.test("a configured list is used as is; one worker down fails the call after the others were told", async () => {
  await withRouter(() => null, async (_router, [worker]) => {
    const down = "http://127.0.0.1:9"; // discard port: nothing listens
    const control = new EngineControl("http://unused.invalid", {
      workers: [worker.url, down],
      timeoutMs: 5_000,
    });
    assert.deepEqual(await control.workers(), [worker.url, down]);
    await assert.rejects(control.pause("retract"), (error: unknown) => {
      assert.ok(error instanceof EngineControlError);
      assert.deepEqual(error.failures.map((f) => f.url), [down]);
      assert.deepEqual(error.answers.map((a) => a.url), [worker.url, down]);
      return true;
    });
    assert.equal(worker.paused(), "retract", "the reachable worker was paused all the same");
    await assert.rejects(control.continue(), EngineControlError);
    assert.equal(worker.paused(), null);
  });
});
