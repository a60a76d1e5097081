/**
 * The gateway's front door: what happens to every request before any route or credential sees
 * it, and to its answer on the way out, whichever app serves it (all of them on one port, or one
 * function served alone).
 *
 * - The URL is normalised once, as a URL parser reads it (`.` and `..` segments, written plainly
 *   or as `%2e`, resolved): routing, the per-session token in a path and every handler see one
 *   path, never the raw one beside a resolved one.
 * - A path no route answers, and an error no handler answered, get the JSON error envelope with
 *   a request id.
 *
 * @module
 */
import { Hono } from "hono";
import { type ErrorOptions, errorResponse, newRequestId, RouteNotFoundError } from "./_http.ts";

/** An app's error handler: a field Hono's types call private (`onError` sets it). */
const errorHandlerOf = (app: Hono) => (app as unknown as { errorHandler: unknown }).errorHandler;

/** Hono's own error handler, which an app that sets none still has. */
const HONO_ERROR_HANDLER = errorHandlerOf(new Hono());

/**
 * `app`, served from the edge: its requests' URLs normalised, its unmatched paths and unanswered
 * errors in the JSON envelope. Returns `app`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Hono } from "hono";
 * import { atEdge } from "./_edge.ts";
 * const app = atEdge(new Hono().get("/a/:id", (c) => c.text(c.req.param("id"))), {
 *   retryAfterMs: 1_000,
 * });
 * const resolved = await app.fetch(new Request("http://gw/a/x/../y"));
 * assert.equal(await resolved.text(), "y");
 * const missing = await app.fetch(new Request("http://gw/b"));
 * assert.equal(missing.status, 404);
 * assert.equal((await missing.json()).error.type, "not_found_error");
 * ```
 */
export function atEdge(app: Hono, errors: ErrorOptions): Hono {
  withErrorEnvelope(app, errors);
  const fetch = app.fetch;
  app.fetch = (request, ...rest) => fetch(normalized(request), ...rest);
  return app;
}

/**
 * Sets `app`'s answer to a path it has no route for, and to an error its handlers did not
 * answer (unless it has its own), to the JSON envelope. Returns `app`.
 */
export function withErrorEnvelope(app: Hono, errors: ErrorOptions): Hono {
  app.notFound((c) =>
    errorResponse(new RouteNotFoundError(c.req.method, c.req.path), newRequestId(), errors)
  );
  if (errorHandlerOf(app) === HONO_ERROR_HANDLER) {
    app.onError((error) => errorResponse(error, newRequestId(), errors));
  }
  return app;
}

/** `request` with its URL as a URL parser resolves it (the same request when already so). */
export function normalized(request: Request): Request {
  const url = new URL(request.url);
  if (url.href === request.url) return request;
  return new Request(url, {
    method: request.method,
    headers: request.headers,
    body: request.body,
    signal: request.signal,
  });
}
