import assert from "node:assert/strict";
import { sameSecret } from "../../lib/timing/mod.ts";

Deno.test("sameSecret() is equality of the two strings, byte for byte", () => {
  assert.equal(sameSecret("admin-token-0123456789", "admin-token-0123456789"), true);
  assert.equal(sameSecret("admin-token-0123456789", "admin-token-0123456788"), false);
  assert.equal(sameSecret("admin-token-0123456789", "admin-token-012345678"), false);
  assert.equal(sameSecret("", ""), true);
  // One character, two bytes: compared as UTF-8, not as UTF-16 code units.
  assert.equal(sameSecret("é", "e\u0301"), false);
  assert.equal(sameSecret("é", "é"), true);
});
