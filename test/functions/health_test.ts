/**
 * `GET /health` and `GET /health/ready` over HTTP, without a token: liveness always, readiness
 * following the engine (a worker draining, every placed worker down, one back) and the store (a
 * PostgreSQL database killed and started again), never naming an address.
 */
import assert from "node:assert/strict";
import { openPostgresStore, type PostgresStore } from "../../lib/kv/mod.ts";
import { startGateway, type TestGateway } from "../_gateway.ts";
import { waitFor } from "../_host.ts";
import { startPostgres } from "../_postgres.ts";

async function get(gw: TestGateway, path: string): Promise<[number, unknown]> {
  const response = await gw.fetch(path);
  return [response.status, await response.json()];
}

Deno.test("/health answers while the process runs; /health/ready follows the engine's own /health", async () => {
  const gw = await startGateway();
  try {
    assert.deepEqual(await get(gw, "/health"), [200, { status: "ok" }]);
    assert.deepEqual(await get(gw, "/health/ready"), [
      200,
      { status: "ready", store: "ok", engine: "ok" },
    ]);
    gw.engine.setHealth(503); // draining, as SGLang answers then
    assert.deepEqual(await get(gw, "/health/ready"), [
      503,
      { status: "not_ready", store: "ok", engine: "the engine: /health did not answer 200" },
    ]);
    assert.deepEqual(await get(gw, "/health"), [200, { status: "ok" }]);
    gw.engine.setHealth(200);
    assert.equal((await get(gw, "/health/ready"))[0], 200);
  } finally {
    await gw.close();
  }
});

Deno.test("with the gateway placing generations, it is ready while one worker is", async () => {
  const gw = await startGateway({ workers: 2 });
  try {
    const [first, second] = gw.fleet!.workers;
    first.setHealth(503);
    assert.equal((await get(gw, "/health/ready"))[0], 200);
    second.setHealth(503);
    const [status, body] = await get(gw, "/health/ready");
    assert.deepEqual([status, body], [503, {
      status: "not_ready",
      store: "ok",
      engine: "no engine worker is ready (worker 0: /health did not answer 200; " +
        "worker 1: /health did not answer 200)",
    }]);
    assert.doesNotMatch(JSON.stringify(body), /127\.0\.0\.1|http/);
  } finally {
    await gw.close();
  }
});

Deno.test("/health/ready says the store is down while its database is, and ready once it is back", async () => {
  const cluster = await startPostgres();
  let store: PostgresStore | null = null;
  let gw: TestGateway | null = null;
  try {
    store = await openPostgresStore(await cluster.database(), {
      maxConnections: 4,
      statementTimeoutMs: 1_000,
      connectTimeoutMs: 500,
      sweepIntervalMs: 0,
    });
    gw = await startGateway({ kv: store });
    assert.equal((await get(gw, "/health/ready"))[0], 200);
    await cluster.kill();
    const [status, body] = await get(gw, "/health/ready");
    assert.equal(status, 503);
    assert.deepEqual((body as { store: string; engine: string }).engine, "ok");
    assert.match((body as { store: string }).store, /^the store did not answer/);
    assert.deepEqual(await get(gw, "/health"), [200, { status: "ok" }]);
    await cluster.start();
    // The driver reconnects on its next statement.
    const back = gw;
    await waitFor(async () => (await get(back, "/health/ready"))[0] === 200, "ready again");
  } finally {
    await gw?.close();
    await store?.end();
    await cluster.close();
  }
});
