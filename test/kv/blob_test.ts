import assert from "node:assert/strict";
import { deleteBlob, readBlob, writeBlob } from "../../lib/kv/mod.ts";

Deno.test("writeBlob() and readBlob() round-trip values small and larger than one commit", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const small = { score: 1, tests: ["a", "b"] };
    assert.equal(await writeBlob(kv, ["blob", "small"], small), 1);
    assert.deepEqual(await readBlob(kv, ["blob", "small"], 1), small);
    // About 2 MB: many chunks, several commits.
    const large = "x".repeat(2_000_000) + "é";
    const chunks = await writeBlob(kv, ["blob", "large"], large);
    assert.ok(chunks > 30, String(chunks));
    assert.equal(await readBlob(kv, ["blob", "large"], chunks), large);
    await deleteBlob(kv, ["blob", "large"]);
    await assert.rejects(readBlob(kv, ["blob", "large"], chunks), /chunk 0 is missing/);
    assert.deepEqual(await readBlob(kv, ["blob", "small"], 1), small);
  } finally {
    kv.close();
  }
});
