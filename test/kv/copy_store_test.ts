/**
 * Moving a gateway's store: `tools/store_copy.ts` copies a KV file with recorded episodes into a
 * PostgreSQL database and back into a new KV file, and proves each copy — every entry byte-equal,
 * every session's exports byte for byte the same in every format — and a gateway on the copy
 * serves the same samples.
 */
import assert from "node:assert/strict";
import { copyStore, firstDifference, openStore, StoreNotEmptyError } from "../../lib/kv/mod.ts";
import { episode, replay } from "../_claude_episode.ts";
import { ADMIN_HEADERS, startGateway } from "../_gateway.ts";
import { startPostgres } from "../_postgres.ts";

const TOOL = new URL("../../tools/store_copy.ts", import.meta.url).pathname;
const POSTGRES = {
  maxConnections: 4,
  statementTimeoutMs: 10_000,
  connectTimeoutMs: 5_000,
  sweepIntervalMs: 0,
};

/** Runs the tool; its exit code and what it printed. */
async function storeCopy(from: string, to: string): Promise<{ code: number; output: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", TOOL, "--from", from, "--to", to],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  return { code: output.code, output: text };
}

Deno.test("tools/store_copy.ts moves a KV file into PostgreSQL and back, proving each copy", async () => {
  const dir = await Deno.makeTempDir({ prefix: "rg-copy-" });
  const cluster = await startPostgres();
  try {
    // A KV file with a recorded Claude Code episode, a rewarded session and a closed one.
    const kvPath = `${dir}/gateway.kv`;
    const source = await openStore({ url: null, kvPath, postgres: POSTGRES });
    const gw = await startGateway({ script: episode.replies, kv: source.store });
    const { id, token } = await gw.openSession({ task: "copy" });
    await replay(gw, token);
    await gw.fetch(`/sessions/${id}/reward`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ score: 0.75, tests: { passed: ["t1"], failed: [] } }),
    });
    const closed = await gw.openSession();
    await gw.fetch(`/sessions/${closed.id}/close`, { method: "POST", headers: ADMIN_HEADERS });
    const before = await gw.samples(id);
    await gw.close();
    await source.close();

    const url = await cluster.database();
    const there = await storeCopy(kvPath, url);
    assert.equal(there.code, 0, there.output);
    assert.match(there.output, /every entry byte-equal/);
    assert.match(there.output, /2 sessions export the same samples in every format/);
    const back = await storeCopy(url, `${dir}/restored.kv`);
    assert.equal(back.code, 0, back.output);

    // A gateway on the database serves the same samples.
    const onPostgres = await openStore({ url, kvPath: ":memory:", postgres: POSTGRES });
    const served = await startGateway({ script: ["Done."], kv: onPostgres.store });
    try {
      assert.deepEqual(await served.samples(id), before);
    } finally {
      await served.close();
      await onPostgres.close();
    }
    // Into a store that is not empty: refused, nothing written.
    const again = await storeCopy(kvPath, url);
    assert.equal(again.code, 1);
    assert.match(again.output, /not empty/);
  } finally {
    await cluster.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("copyStore() refuses a destination that is not empty; firstDifference() names what differs", async () => {
  const [a, b] = [await Deno.openKv(":memory:"), await Deno.openKv(":memory:")];
  try {
    await a.set(["session", "s1"], { id: "s1" });
    await b.set(["other"], 1);
    await assert.rejects(copyStore(a, b), StoreNotEmptyError);
    await b.delete(["other"]);
    await copyStore(a, b);
    assert.equal(await firstDifference(a, b), null);
    await b.set(["session", "s1"], { id: "s2" });
    assert.equal(await firstDifference(a, b), '["session","s1"]: the values differ');
    await b.set(["session", "s1"], { id: "s1" });
    await b.set(["session", "s3"], 1);
    assert.equal(await firstDifference(a, b), '["session","s3"] is only in one store');
  } finally {
    a.close();
    b.close();
  }
});
