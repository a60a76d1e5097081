/**
 * The gateway on the PostgreSQL store (a throwaway cluster): the recorded Claude Code episode is
 * recorded as one exact chain, token for token what a gateway on a KV file records, and a later
 * turn costs the store the same few round trips.
 */
import assert from "node:assert/strict";
import type Anthropic from "@anthropic-ai/sdk";
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

Deno.test("the database restarting under a gateway: turns answer a retriable 503 naming the store, nothing is half-written, and serving resumes by itself", async () => {
  const cluster = await startPostgres();
  let store: PostgresStore | null = null;
  let gw: TestGateway | null = null;
  try {
    store = await openPostgresStore(await cluster.database(), {
      ...OPTIONS,
      statementTimeoutMs: 2_000,
      connectTimeoutMs: 1_000,
    });
    gw = await startGateway({ script: () => "Done.", kv: store });
    const { id, token } = await gw.openSession();
    const client = gw.anthropic(token);
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "First." }];
    const first = await client.messages.create({ model: "m", max_tokens: 16, messages });
    messages.push({ role: "assistant", content: first.content }, {
      role: "user",
      content: "Second.",
    });
    const before = await gw.samples(id);

    await cluster.kill();
    const refused = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token },
      body: JSON.stringify({ model: "m", max_tokens: 16, messages }),
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("x-should-retry"), "true");
    const error = await refused.json();
    assert.equal(error.error.type, "unavailable_error");
    assert.match(error.error.message, /^The store \(PostgreSQL\) is unavailable: /);

    await cluster.start();
    // The agent's retry, once the database is back: the same process serves it.
    const second = await client.messages.create({ model: "m", max_tokens: 16, messages });
    assert.equal(second.content.at(-1)?.type, "text");
    const after = await gw.samples(id);
    assert.equal(after[0].turns.length, 2, "one turn more: the refused attempt left nothing");
    assert.deepEqual(after[0].turns[0], before[0].turns[0]);
    assert.deepEqual(after[0].prompt_ids, before[0].prompt_ids);
    assert.deepEqual(
      gw.engine.calls.at(-1)!.inputIds.slice(0, before[0].prompt_ids.length),
      before[0].prompt_ids,
    );
  } finally {
    await gw?.close();
    await store?.end();
    await cluster.close();
  }
});
