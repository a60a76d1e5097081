/**
 * How the viewer knows its reader holds the admin token without keeping it: the token is typed
 * once into the login form (a POST body, never a URL, so no access log sees it) and answered
 * with a cookie that is not the token but an HMAC of an expiry under it. Any worker holding the
 * same admin token checks the cookie alone; changing the token logs every viewer out.
 *
 * @module
 */
import { createHmac } from "node:crypto";
import { sameSecret } from "../../lib/timing/mod.ts";

/** The cookie's name. */
export const UI_COOKIE = "rg_ui";

/** How long a login lasts. */
export const UI_LOGIN_MS = 12 * 3_600_000;

/** Longest token the login form takes, in characters (admin tokens are far shorter). */
export const MAX_TOKEN_CHARS = 512;

function signature(adminToken: string, expiresAt: number): string {
  return createHmac("sha256", adminToken).update(`rollout-gateway-ui:${expiresAt}`).digest(
    "base64url",
  );
}

/**
 * The cookie value of a login that lasts until `expiresAt`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loginCookie, validCookie } from "./_auth.ts";
 * const value = loginCookie("admin-token-0123456789", 2_000_000_000_000);
 * assert.equal(validCookie(value, "admin-token-0123456789", 1_900_000_000_000), true);
 * assert.equal(validCookie(value, "another-token-0123456789", 1_900_000_000_000), false);
 * ```
 */
export function loginCookie(adminToken: string, expiresAt: number): string {
  return `${expiresAt}.${signature(adminToken, expiresAt)}`;
}

/** The cookie was made with `adminToken` and has not expired at `now`. */
export function validCookie(value: string, adminToken: string, now: number): boolean {
  const match = /^(\d{13,15})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!match) return false;
  const expiresAt = Number(match[1]);
  return expiresAt > now && sameSecret(match[2], signature(adminToken, expiresAt));
}

/** The value of cookie `name` in a `Cookie` header, or `null`. */
export function readCookie(header: string | null, name: string): string | null {
  if (header === null) return null;
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return null;
}

/**
 * Where to go after logging in: a viewer path the form carried, or the viewer's front page.
 * Anything else (another site, `//host`, a backslash, a path that leaves `/ui` once a browser
 * resolves its `..` segments, written plainly or as `%2e`) is not followed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nextPath } from "./_auth.ts";
 * assert.equal(nextPath("/ui/sessions/s1"), "/ui/sessions/s1");
 * assert.equal(nextPath("https://elsewhere.example/"), "/ui");
 * assert.equal(nextPath("/ui/../sessions"), "/ui");
 * ```
 */
export function nextPath(value: string | null): string {
  if (value === null || value.length > 2048) return "/ui";
  if (!/^\/ui(?:[/?][^\s\\]*)?$/.test(value) || value.includes("//")) return "/ui";
  // As the browser will resolve it: dot segments, plain or percent-encoded, gone.
  const resolved = new URL(value, "http://viewer.invalid");
  const path = resolved.pathname;
  return path === "/ui" || path.startsWith("/ui/") ? path + resolved.search : "/ui";
}
