/**
 * The gateway on the PostgreSQL store (a throwaway cluster): the recorded Claude Code episode is
 * recorded as one exact chain, token for token what a gateway on a KV file records, and a later
 * turn costs the store the same few round trips.
 */
import assert from "node:assert/strict";
import { openPostgresStore, type PostgresStore } from "../../lib/kv/mod.ts";
import { episode, replay } from "../_claude_episode.ts";
import { ADMIN_HEADERS, startGateway, type TestGateway } from "../_gateway.ts";
import { startPostgres } from "../_postgres.ts";

const OPTIONS = {
  maxConnections: 8,
  statementTimeoutMs: 10_000,
  connectTimeoutMs: 5_000,
  sweepIntervalMs: 0,
};

Deno.test("the recorded Claude Code episode on PostgreSQL records exactly what it records on a KV file", async () => {
  const cluster = await startPostgres();
  let store: PostgresStore | null = null;
  let onPostgres: TestGateway | null = null;
  const onKv = await startGateway({ script: episode.replies });
  try {
    store = await openPostgresStore(await cluster.database(), OPTIONS);
    onPostgres = await startGateway({ script: episode.replies, kv: store });
    const samples = [];
    for (const gw of [onKv, onPostgres]) {
      const opened = await gw.fetch("/sessions", {
        method: "POST",
        headers: ADMIN_HEADERS,
        body: JSON.stringify({ id: "episode" }),
      });
      const { id, token } = await opened.json();
      await replay(gw, token);
      samples.push(await gw.samples(id));
    }
    assert.deepEqual(
      onPostgres.engine.calls.map((call) => call.inputIds),
      onKv.engine.calls.map((call) => call.inputIds),
    );
    assert.ok(samples[0].length > 0);
    assert.deepEqual(samples[1], samples[0]);
  } finally {
    await onKv.close();
    await onPostgres?.close();
    await store?.end();
    await cluster.close();
  }
});
