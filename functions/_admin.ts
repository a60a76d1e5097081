/**
 * The admin-token guard of the trainer's routes (`/sessions`, `/evaluate`): a missing or wrong
 * token is 401, a session token is 403.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { AuthenticationError, resolveToken } from "../lib/session/mod.ts";
import { sameSecret } from "../lib/timing/mod.ts";
import type { Deps } from "./_deps.ts";
import { bearerToken, newRequestId, PermissionError } from "./_http.ts";

/** Middleware admitting only the admin token, sent as `Authorization: Bearer`. */
export function admin(deps: Pick<Deps, "kv" | "adminToken">): MiddlewareHandler {
  return async (c, next) => {
    await checkAdmin(deps, bearerToken(c.req.raw));
    await next();
    c.res.headers.set("request-id", c.res.headers.get("request-id") ?? newRequestId());
  };
}

/**
 * Passes when `token` is the admin token.
 *
 * @throws {AuthenticationError} for no token or a wrong one.
 * @throws {PermissionError} for a session's token.
 */
export async function checkAdmin(
  deps: Pick<Deps, "kv" | "adminToken">,
  token: string | null,
): Promise<void> {
  if (token === null) {
    throw new AuthenticationError("Missing admin token: send it as Authorization: Bearer");
  }
  if (sameSecret(token, deps.adminToken)) return;
  const session = await resolveToken(deps.kv, token, { devOpenSessions: false }).catch(() => null);
  if (session) throw new PermissionError("A session token cannot use the trainer API");
  throw new AuthenticationError("Invalid admin token");
}
