import assert from "node:assert/strict";
import { loginCookie, nextPath, readCookie, validCookie } from "../../functions/ui/_auth.ts";

const TOKEN = "admin-token-0123456789";

Deno.test("a login cookie is valid for its token until it expires, and cannot be altered", () => {
  const value = loginCookie(TOKEN, 2_000_000_000_000);
  assert.equal(validCookie(value, TOKEN, 1_999_999_999_999), true);
  assert.equal(validCookie(value, TOKEN, 2_000_000_000_000), false, "expired");
  assert.equal(validCookie(value, `${TOKEN}x`, 1), false, "another token");
  assert.equal(validCookie(value.replace(/^2/, "3"), TOKEN, 1), false, "a later expiry");
  assert.equal(validCookie(`${value}A`, TOKEN, 1), false);
  assert.equal(validCookie(TOKEN, TOKEN, 1), false, "the token itself is not a cookie");
  assert.equal(validCookie("", TOKEN, 1), false);
  assert.ok(!value.includes(TOKEN));
});

Deno.test("readCookie() finds one cookie among several; nextPath() follows only viewer paths", () => {
  assert.equal(readCookie("a=1; rg_ui=v.x; b=2", "rg_ui"), "v.x");
  assert.equal(readCookie("rg_uix=1", "rg_ui"), null);
  assert.equal(readCookie(null, "rg_ui"), null);
  for (const ok of ["/ui", "/ui/rollouts", "/ui/sessions/s1?turn=2", "/ui?status=open"]) {
    assert.equal(nextPath(ok), ok);
  }
  for (
    const bad of [
      null,
      "",
      "/",
      "/uix",
      "/sessions",
      "//evil.example",
      "/ui//evil",
      "https://e.x/ui",
      "/ui\\x",
      "/ui/ x",
      "/ui/" + "a".repeat(3000),
    ]
  ) {
    assert.equal(nextPath(bad), "/ui", String(bad));
  }
});
