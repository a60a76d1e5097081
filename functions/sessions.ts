/**
 * The trainer's surface: open sessions and read their samples. Every route needs the admin
 * token as `Authorization: Bearer`; a session token is refused with 403.
 *
 * Served alone with `deno serve -A functions/sessions.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono, type MiddlewareHandler } from "hono";
import { timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { sessionSamples } from "../lib/segment/mod.ts";
import { AuthenticationError, openSession, resolveToken, SESSION_ID } from "../lib/session/mod.ts";
import { type Deps, lazyApp } from "./_deps.ts";
import {
  credential,
  errorResponse,
  newRequestId,
  PermissionError,
  readJson,
  validate,
} from "./_http.ts";

const OpenSessionBody = z.object({
  id: z.string().regex(SESSION_ID, "letters, digits, _ and -, up to 128 characters").optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/** The sessions app over `deps`. */
export function createSessionsApp(deps: Deps): Hono {
  const app = new Hono();
  app.use("/sessions/*", admin(deps));
  app.use("/sessions", admin(deps));

  app.post("/sessions", async (c) => {
    const body = validate(OpenSessionBody, await readJson(c.req.raw, deps.config.maxBodyBytes));
    const { session, token } = await openSession(deps.kv, body);
    return c.json(
      { id: session.id, token, created_at: new Date(session.createdAt).toISOString() },
      201,
    );
  });

  app.get("/sessions/:id/samples", async (c) => {
    return c.json({ samples: await sessionSamples(deps.kv, c.req.param("id")) });
  });

  app.onError((error) => errorResponse(error, newRequestId()));
  return app;
}

/** Admits only the admin token; tells a session token it has no business here. */
function admin(deps: Deps): MiddlewareHandler {
  return async (c, next) => {
    const token = credential(c.req.raw);
    if (token === null) {
      throw new AuthenticationError("Missing admin token: send it as Authorization: Bearer");
    }
    if (!sameSecret(token, deps.adminToken)) {
      const session = await resolveToken(deps.kv, token, { devOpenSessions: false }).catch(() =>
        null
      );
      if (session) throw new PermissionError("A session token cannot use the trainer API");
      throw new AuthenticationError("Invalid admin token");
    }
    await next();
  };
}

function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export default lazyApp(createSessionsApp);
