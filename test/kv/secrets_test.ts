import assert from "node:assert/strict";
import { keys } from "../../lib/kv/keys.ts";
import { sharedSecret } from "../../lib/kv/secrets.ts";

Deno.test("sharedSecret() returns the same 32-byte base64url value on repeated calls", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const first = await sharedSecret(kv, "signing");
    assert.match(first, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(await sharedSecret(kv, "signing"), first);
    assert.equal((await kv.get(keys.secret("signing"))).value, first);
  } finally {
    kv.close();
  }
});

Deno.test("sharedSecret() keeps a different secret for each name", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const signing = await sharedSecret(kv, "signing");
    const admin = await sharedSecret(kv, "admin");
    assert.notEqual(signing, admin);
    assert.equal(await sharedSecret(kv, "admin"), admin);
  } finally {
    kv.close();
  }
});

Deno.test("sharedSecret() returns the stored value when one exists", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await kv.set(keys.secret("signing"), "configured-elsewhere");
    assert.equal(await sharedSecret(kv, "signing"), "configured-elsewhere");
  } finally {
    kv.close();
  }
});

Deno.test("sharedSecret() agrees across concurrent callers", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const values = await Promise.all(Array.from({ length: 8 }, () => sharedSecret(kv, "signing")));
    assert.deepEqual(values, Array(8).fill(values[0]));
  } finally {
    kv.close();
  }
});

Deno.test("sharedSecret() returns the same value through two KV handles on one file", async () => {
  const dir = await Deno.makeTempDir();
  const a = await Deno.openKv(`${dir}/gateway.kv`);
  const b = await Deno.openKv(`${dir}/gateway.kv`);
  try {
    const [fromA, fromB] = await Promise.all([
      sharedSecret(a, "signing"),
      sharedSecret(b, "signing"),
    ]);
    assert.equal(fromA, fromB);
    assert.equal(await sharedSecret(b, "signing"), fromA);
  } finally {
    a.close();
    b.close();
    await Deno.remove(dir, { recursive: true });
  }
});
