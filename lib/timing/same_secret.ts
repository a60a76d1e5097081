/**
 * Comparing a secret a client sent with the one kept, in time that does not depend on where
 * they first differ (or a client could find the secret a character at a time).
 *
 * @module
 */
import { timingSafeEqual } from "node:crypto";

/**
 * The two secrets are equal; compared in constant time for secrets of one length (a length that
 * differs is told apart at once: lengths are not secret).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sameSecret } from "./same_secret.ts";
 * assert.equal(sameSecret("token-0123456789", "token-0123456789"), true);
 * assert.equal(sameSecret("token-0123456789", "token-0123456780"), false);
 * assert.equal(sameSecret("short", "token-0123456789"), false);
 * ```
 */
export function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
