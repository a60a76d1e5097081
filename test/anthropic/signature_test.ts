import assert from "node:assert/strict";
import { signThinking, verifyThinking } from "../../lib/anthropic/mod.ts";

const SECRET = "secret-secret-secret-0123456789";

Deno.test("signThinking() is deterministic and base64url", () => {
  const signature = signThinking(SECRET, "sess_1", "plan the work 🎉");
  assert.equal(signThinking(SECRET, "sess_1", "plan the work 🎉"), signature);
  assert.match(signature, /^[A-Za-z0-9_-]{43}$/);
});

Deno.test("verifyThinking() accepts the signature of the same secret, session and text", () => {
  const signature = signThinking(SECRET, "sess_1", "plan");
  assert.equal(verifyThinking(SECRET, "sess_1", "plan", signature), true);
  assert.equal(verifyThinking(SECRET, "sess_1", "", signThinking(SECRET, "sess_1", "")), true);
});

Deno.test("verifyThinking() rejects another session, secret or modified text", () => {
  const signature = signThinking(SECRET, "sess_1", "plan");
  assert.equal(verifyThinking(SECRET, "sess_2", "plan", signature), false);
  assert.equal(verifyThinking(`${SECRET}x`, "sess_1", "plan", signature), false);
  assert.equal(verifyThinking(SECRET, "sess_1", "plan ", signature), false);
  assert.equal(verifyThinking(SECRET, "sess_1", "Plan", signature), false);
});

Deno.test("verifyThinking() rejects malformed signatures without throwing", () => {
  const signature = signThinking(SECRET, "sess_1", "plan");
  for (const bad of ["", "x", `${signature}=`, signature.slice(1), `é${signature.slice(2)}`]) {
    assert.equal(verifyThinking(SECRET, "sess_1", "plan", bad), false, bad);
  }
});

Deno.test("signThinking() separates the session from the text", () => {
  assert.notEqual(signThinking(SECRET, "sess_1", "ab"), signThinking(SECRET, "sess_1a", "b"));
});
