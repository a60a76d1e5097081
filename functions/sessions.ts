/**
 * The trainer's surface: open, list, read, reward, close and delete sessions, and export their
 * samples and the images they name. Every route needs the admin token as `Authorization: Bearer`;
 * a session token is refused with 403.
 *
 * Served alone with `deno serve -A functions/sessions.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";
import {
  closeSession,
  listSessionSummaries,
  openSession,
  readSessionSummary,
  removeSession,
  SESSION_ID,
  sessionImage,
  setReward,
} from "../lib/session/mod.ts";
import { REWARD_ALLOCATIONS } from "../lib/config/mod.ts";
import { chainRoutesFile } from "../lib/segment/mod.ts";
import { admin } from "./_admin.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import { exportSamples, type SamplesDeps, SamplesQuery } from "./_samples.ts";
import { errorOptions, errorResponse, newRequestId, readJson, validate } from "./_http.ts";
import { SealedCursor, sessionJson, sessionPageJson, SESSIONS_LISTING } from "./_views.ts";

/**
 * Refuses a number JSON cannot show, wherever it is: a literal too large for a double (`1e999`)
 * parses as an infinity, which would be kept and then shown as `null`.
 */
function finiteNumbers(value: unknown, ctx: z.core.$RefinementCtx): void {
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === "number" && !Number.isFinite(value)) {
      ctx.addIssue({
        code: "custom",
        path,
        message: `expected a finite number, received ${value}`,
      });
      return;
    }
    if (typeof value !== "object" || value === null) continue;
    const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
    for (const [key, inner] of entries) stack.push({ value: inner, path: [...path, key] });
  }
}

const OpenSessionBody = z.strictObject({
  id: z.string().regex(SESSION_ID, "letters, digits, _ and -, up to 128 characters").optional(),
  metadata: z.record(z.string(), z.unknown()).superRefine(finiteNumbers).optional(),
  /** How this session's reward is shared among its segments. */
  reward_allocation: z.enum(REWARD_ALLOCATIONS).optional(),
  /** Each turn keeps its request messages, shown by the raw export. */
  record_messages: z.boolean().optional(),
});

/** A reward: a finite numeric `score`, and any evidence beside it, its numbers finite too. */
const RewardBody = z.looseObject({ score: z.number().finite() }).superRefine(finiteNumbers);

const ListQuery = z.strictObject({
  status: z.enum(["open", "closed"]).optional(),
  /** Sessions whose reward's score is at least this (a session with no reward is left out). */
  reward_min: z.string().min(1, "expected a number").transform(Number).pipe(z.number().finite())
    .optional(),
  /** Sessions whose reward's score is at most this. */
  reward_max: z.string().min(1, "expected a number").transform(Number).pipe(z.number().finite())
    .optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: SealedCursor.optional(),
});

/** What the sessions app uses. */
export type SessionsDeps = AdminDeps & SamplesDeps & Pick<Deps, "lifecycle" | "cursors">;

/** The query of a routes export: slime's layout (`len(tokens) - 1` rows) or verl's (one a token). */
const RoutesQuery = z.strictObject({ layout: z.enum(["slime", "verl"]).default("slime") });

/** The sessions app over `deps`. */
export function createSessionsApp(deps: SessionsDeps): Hono {
  const app = new Hono();
  const { lifecycle } = deps;
  app.use("/sessions", admin(deps));
  app.use("/sessions/*", admin(deps));

  app.post("/sessions", async (c) => {
    const body = validate(OpenSessionBody, await readJson(c.req.raw, deps.config));
    const { session, token } = await openSession(deps.kv, {
      id: body.id,
      metadata: body.metadata,
      allocation: body.reward_allocation,
      recordMessages: body.record_messages,
    });
    return c.json(
      { id: session.id, token, created_at: new Date(session.createdAt).toISOString() },
      201,
    );
  });

  app.get("/sessions", async (c) => {
    // Keys come from the client: a Map, so `metadata.__proto__` is a key like any other. The
    // metadata filters are open-ended; every other parameter must be one the listing knows.
    const metadata = new Map<string, string>();
    const named = new URLSearchParams();
    for (const [name, value] of new URL(c.req.url).searchParams) {
      // A parameter given twice counts once, its first value.
      const key = name.startsWith("metadata.") ? name.slice("metadata.".length) : null;
      if (key !== null && !metadata.has(key)) metadata.set(key, value);
      else if (key === null && !named.has(name)) named.set(name, value);
    }
    const query = validate(ListQuery, Object.fromEntries(named));
    const filter = {
      status: query.status,
      metadata,
      minScore: query.reward_min,
      maxScore: query.reward_max,
    };
    const page = { limit: query.limit, cursor: deps.cursors.open(SESSIONS_LISTING, query.cursor) };
    const listed = await listSessionSummaries(deps.kv, filter, page);
    return c.json(
      sessionPageJson({
        sessions: listed.sessions,
        cursor: deps.cursors.seal(SESSIONS_LISTING, listed.cursor),
      }),
    );
  });

  app.get(
    "/sessions/:id",
    async (c) => c.json(sessionJson(await readSessionSummary(deps.kv, c.req.param("id")))),
  );

  app.post("/sessions/:id/reward", async (c) => {
    const reward = validate(RewardBody, await readJson(c.req.raw, deps.config));
    return c.json(sessionJson(await setReward(lifecycle, c.req.param("id"), reward)));
  });

  app.post(
    "/sessions/:id/close",
    async (c) => c.json(sessionJson(await closeSession(lifecycle, c.req.param("id")))),
  );

  app.delete("/sessions/:id", async (c) => {
    await removeSession(lifecycle, c.req.param("id"));
    return c.body(null, 204);
  });

  app.get("/sessions/:id/samples", async (c) => {
    const query = validate(SamplesQuery, c.req.query());
    const exported = await exportSamples(deps, c.req.param("id"), query);
    if (query.format !== "jsonl") return c.json(exported);
    const { records } = exported as { records: unknown[] };
    return c.body(records.map((record) => JSON.stringify(record) + "\n").join(""), 200, {
      "content-type": "application/x-ndjson",
    });
  });

  // The routed experts a sample names (`routed_experts.url`), as a `.npy`, streamed.
  app.get("/sessions/:id/routes/:chain", async (c) => {
    const { layout } = validate(RoutesQuery, c.req.query());
    const file = await chainRoutesFile(
      deps.kv,
      c.req.param("id"),
      c.req.param("chain"),
      deps.moe,
      layout,
    );
    return c.body(ReadableStream.from(file.pieces), 200, {
      "content-type": "application/octet-stream",
      "content-length": String(file.bytes),
      "content-disposition": `attachment; filename="routes.npy"`,
    });
  });

  // An image a sample names (`images[].url`), as its bytes.
  app.get("/sessions/:id/images/:digest", async (c) => {
    const image = await sessionImage(deps.kv, c.req.param("id"), c.req.param("digest"));
    return c.body(image.bytes as Uint8Array<ArrayBuffer>, 200, {
      "content-type": image.mediaType,
      "cache-control": "private, max-age=31536000, immutable",
    });
  });

  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

export default lazyApp(createSessionsApp);
