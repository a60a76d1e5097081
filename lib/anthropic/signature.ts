/**
 * Signatures of thinking blocks. The gateway signs each thinking block it returns, bound to the
 * session, so a block that comes back in a later request can be checked as the gateway's own,
 * unmodified (Anthropic rejects modified thinking blocks the same way).
 *
 * @module
 */
import { createHmac } from "node:crypto";
import { sameSecret } from "../timing/mod.ts";

/**
 * The signature of `thinking` returned in `sessionId`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { signThinking, verifyThinking } from "./signature.ts";
 * const signature = signThinking("secret-secret-secret", "sess_1", "plan");
 * assert.equal(verifyThinking("secret-secret-secret", "sess_1", "plan", signature), true);
 * assert.equal(verifyThinking("secret-secret-secret", "sess_2", "plan", signature), false);
 * ```
 */
export function signThinking(secret: string, sessionId: string, thinking: string): string {
  return createHmac("sha256", secret).update(sessionId).update("\0").update(thinking).digest(
    "base64url",
  );
}

/** True when `signature` is what {@linkcode signThinking} gives for this session and text. */
export function verifyThinking(
  secret: string,
  sessionId: string,
  thinking: string,
  signature: string,
): boolean {
  return sameSecret(signThinking(secret, sessionId, thinking), signature);
}
