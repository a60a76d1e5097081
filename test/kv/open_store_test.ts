/**
 * Opening the configured store: processes starting together never die of it (a fresh KV file
 * opened by several processes at once; a fresh PostgreSQL database migrated by several at once),
 * and a database that cannot be reached stops start-up naming `STORE_URL`.
 */
import assert from "node:assert/strict";
import { resolveConfig } from "../../lib/config/mod.ts";
import { ConfigError } from "../../lib/errors/mod.ts";
import { openStore, type StoreLocation } from "../../lib/kv/mod.ts";
import { buildDeps } from "../../functions/_deps.ts";
import { qwen3 } from "../_gateway.ts";
import { startPostgres } from "../_postgres.ts";

const POSTGRES = {
  maxConnections: 4,
  statementTimeoutMs: 10_000,
  connectTimeoutMs: 2_000,
  sweepIntervalMs: 0,
};

Deno.test("eight processes opening one fresh KV file at once all open it and write", async () => {
  const dir = await Deno.makeTempDir({ prefix: "rg-open-" });
  try {
    const path = `${dir}/sub/gateway.kv`;
    const module = new URL("../../lib/kv/open_store.ts", import.meta.url).href;
    const script = `
      const { openStore } = await import(${JSON.stringify(module)});
      const opened = await openStore({ url: null, kvPath: ${JSON.stringify(path)}, postgres: {} });
      await opened.store.set(["pid", Deno.pid], 1);
      await opened.close();
    `;
    const runs = await Promise.all(
      Array.from({ length: 8 }, () =>
        new Deno.Command(Deno.execPath(), {
          args: ["eval", "--unstable-kv", script],
          stdout: "piped",
          stderr: "piped",
        }).output()),
    );
    for (const run of runs) assert.ok(run.success, new TextDecoder().decode(run.stderr));
    const kv = await Deno.openKv(path);
    let written = 0;
    for await (const _ of kv.list({ prefix: ["pid"] })) written++;
    kv.close();
    assert.equal(written, 8);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("gateways starting at once on one fresh PostgreSQL database all migrate and open it", async () => {
  const cluster = await startPostgres();
  try {
    const url = await cluster.database();
    const location: StoreLocation = { url, kvPath: ":memory:", postgres: POSTGRES };
    const opened = await Promise.all(Array.from({ length: 6 }, () => openStore(location)));
    await Promise.all(opened.map((o, i) => o.store.set(["opened", i], i)));
    const entries = await opened[0].store.getMany(opened.map((_, i) => ["opened", i]));
    assert.deepEqual(entries.map((entry) => entry.value), [0, 1, 2, 3, 4, 5]);
    assert.match(opened[0].description, /^PostgreSQL postgres:\/\/gateway@127\.0\.0\.1:\d+\/t/);
    await Promise.all(opened.map((o) => o.close()));
  } finally {
    await cluster.close();
  }
});

Deno.test("a STORE_URL that cannot be reached stops start-up naming the variable, its password hidden", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const config = resolveConfig({
    STORE_URL: `postgres://gw:secret-password@127.0.0.1:${port}/rg`,
    STORE_TIMEOUT_MS: "1000",
    SGLANG_URL: "http://127.0.0.1:9",
  });
  await assert.rejects(buildDeps(config, { tokenizer: await qwen3() }), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.variable, "STORE_URL");
    assert.match(
      error.message,
      new RegExp(
        `^Cannot reach the store at STORE_URL \\(postgres://gw:\\*\\*\\*@127\\.0\\.0\\.1:${port}/rg\\): `,
      ),
    );
    assert.ok(!error.message.includes("secret-password"));
    return true;
  });
});

Deno.test("STORE_URL must be a postgres:// URL", () => {
  for (const url of ["mysql://x/y", "postgres://", "not a url"]) {
    assert.throws(() => resolveConfig({ STORE_URL: url }), (error) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.variable, "STORE_URL");
      return true;
    });
  }
});
