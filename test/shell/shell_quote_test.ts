import assert from "node:assert/strict";
import { shellQuote } from "../../lib/shell/mod.ts";

Deno.test("shellQuote() leaves plain words alone and quotes the rest", () => {
  assert.deepEqual(
    ["tests.test_a.T.test_b", "a b", "it's", "x::y[1-2]"].map(shellQuote),
    ["tests.test_a.T.test_b", "'a b'", "'it'\\''s'", "'x::y[1-2]'"],
  );
});
