import assert from "node:assert/strict";
import { mallocTrim, trimEvery } from "../../lib/cache/mod.ts";

Deno.test("mallocTrim() calls glibc's malloc_trim on Linux, off the event loop", async () => {
  const trim = mallocTrim();
  if (Deno.build.os !== "linux") return assert.equal(trim, null);
  assert.ok(trim, "glibc's libc.so.6 opened");
  // Memory freed in an arena: some of it can be given back.
  let buffers: Uint8Array[] | null = Array.from({ length: 256 }, () => new Uint8Array(64 * 1024));
  assert.equal(buffers.length, 256);
  buffers = null;
  assert.equal(typeof await trim(), "boolean");
});

Deno.test("trimEvery() runs one trim at a time: a slow trim is not started again while it runs", async () => {
  let calls = 0;
  const first = Promise.withResolvers<boolean>();
  const second = Promise.withResolvers<void>();
  const stop = trimEvery(
    () => {
      calls++;
      if (calls === 1) return first.promise;
      second.resolve();
      return Promise.resolve(true);
    },
    1,
    true,
  );
  // An interval of the same period, started after: by its fifth tick, the trims' interval has
  // ticked five times too (timers fire in deadline order, ties in the order they were made).
  let ticks = 0;
  const ticked = Promise.withResolvers<void>();
  const observer = setInterval(() => ++ticks === 5 && ticked.resolve(), 1);
  await ticked.promise;
  clearInterval(observer);
  assert.equal(calls, 1);
  first.resolve(true);
  await second.promise;
  stop();
  assert.equal(calls, 2);
});
