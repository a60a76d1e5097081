/**
 * The trajectory viewer (`/ui`): sessions with their chains, timelines and tokens coloured by
 * loss mask and logprob; rollout groups with their phases and evaluation results. Every page
 * needs the admin token: typed once into the login form, kept as a signed cookie (see
 * `ui/_auth.ts`), or sent as `Authorization: Bearer` like the trainer API. Pages are rendered
 * here, read-only, from the same records the trainer API reads.
 *
 * Served alone with `deno serve -A functions/ui.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { html } from "hono/html";
import type { Context, ErrorHandler } from "hono";
import { z } from "zod";
import {
  getRolloutGroup,
  JobNotFoundError,
  listGroupJobs,
  listRolloutGroups,
  readJobSummary,
  summarizeGroup,
} from "../lib/rollout/mod.ts";
import {
  AuthenticationError,
  listSessionSummaries,
  MAX_PAGE_TOKENS,
  readChainPage,
  readSessionSummary,
  readTimeline,
} from "../lib/session/mod.ts";
import { LimitError } from "../lib/limits/mod.ts";
import { checkAdmin } from "./_admin.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import { SealedCursor, SESSIONS_LISTING } from "./_views.ts";
import { bearerToken, describeError, readBody, RouteNotFoundError, validate } from "./_http.ts";
import {
  loginCookie,
  MAX_TOKEN_CHARS,
  nextPath,
  readCookie,
  UI_COOKIE,
  UI_LOGIN_MS,
  validCookie,
} from "./ui/_auth.ts";
import { type Html, page, PAGE_HEADERS, viewerSecurity } from "./ui/_layout.ts";
import { groupBody, groupsBody, harnessOf } from "./ui/_rollouts.ts";
import { sessionBody, sessionsBody } from "./ui/_sessions.ts";
import { tokensBody } from "./ui/_tokens.ts";

/** Largest login form body, in bytes. */
const MAX_LOGIN_BYTES = 4096;
/** Tokens per page of the token view unless asked. */
const DEFAULT_PAGE_TOKENS = 2048;
/** Most `key=value` metadata filters one list takes. */
const MAX_META_FILTERS = 8;

/** The rollout groups' listing, as its cursors name it (the sessions' is `SESSIONS_LISTING`). */
const GROUPS_LISTING = "rollout_groups";

const SessionsQuery = z.object({
  status: z.enum(["open", "closed", ""]).optional(),
  reward_min: z.union([z.literal(""), z.coerce.number().finite()]).optional(),
  reward_max: z.union([z.literal(""), z.coerce.number().finite()]).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: SealedCursor.optional(),
});

const TokensQuery = z.object({
  from: z.coerce.number().int().min(0).optional(),
  turn: z.coerce.number().int().min(0).optional(),
  size: z.coerce.number().int().min(16).max(MAX_PAGE_TOKENS).default(DEFAULT_PAGE_TOKENS),
});

const GroupsQuery = z.object({ cursor: SealedCursor.optional() });

const GROUP_ID = /^grp_[0-9a-f]{24}$/;

/** The metadata filters of a list: `meta=key=value` from the form, `metadata.KEY=VALUE` too. */
function metaFilters(url: URL): { pairs: string[]; map: Map<string, string> } {
  const pairs = url.searchParams.getAll("meta").filter((pair) => pair.trim() !== "");
  for (const [name, value] of url.searchParams) {
    if (name.startsWith("metadata.")) pairs.push(`${name.slice("metadata.".length)}=${value}`);
  }
  if (pairs.length > MAX_META_FILTERS) {
    throw new LimitError("meta", `at most ${MAX_META_FILTERS} filters`);
  }
  // Keys come from the client: a Map, so `__proto__` is a key like any other.
  const map = new Map<string, string>();
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0 || pair.length > 1024) {
      throw new LimitError("meta", "write key=value, up to 1024 characters");
    }
    map.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
  }
  return { pairs, map };
}

/** What the viewer uses: the records, the tokenizer to show tokens as text. */
export type UiDeps = AdminDeps & Pick<Deps, "tokenizer" | "cursors">;

/** The viewer app over `deps`: its login, its pages behind the admin token, its error pages. */
export function createUiApp(deps: UiDeps): Hono {
  const app = new Hono();
  app.use("/ui", viewerSecurity);
  app.use("/ui/*", viewerSecurity);
  addLoginRoutes(app, deps);
  // Everything else needs the admin token: a valid cookie, or the bearer token itself.
  const guard = adminGuard(deps);
  app.use("/ui", guard);
  app.use("/ui/*", guard);
  addSessionRoutes(app, deps);
  addRolloutRoutes(app, deps);
  app.all("/ui/*", (c) => {
    throw new RouteNotFoundError(c.req.method, c.req.path);
  });
  app.onError(errorPage(deps));
  return app;
}

/** A viewer page titled `title` around `body`, with the page headers; `script`: it runs one. */
function respond(c: Context, title: string, body: Html, status = 200, script = false) {
  return c.html(page(title, body, { nonce: nonceOf(c), script }), status as 200, PAGE_HEADERS);
}

/**
 * The login form with `message` (a refusal, in words) above it, answered with `status`; its
 * `next` is the page asked for (the login page's own `next` on the login page).
 */
function loginPage(c: Context, status: number, message: string | null) {
  const url = new URL(c.req.url);
  const next = nextPath(
    url.pathname === "/ui/login" ? url.searchParams.get("next") : url.pathname + url.search,
  );
  const body = html`<div class="login"><h1>Rollout Gateway viewer</h1>
<p>Enter the admin token (<code>ADMIN_TOKEN</code>). It is checked once and kept as a signed
cookie for 12 hours; it never goes into a URL.</p>
${message ? html`<p class="error" id="login-error">${message}</p>` : ""}
<form method="post" action="/ui/login?next=${encodeURIComponent(next)}">
<input type="password" name="token" autocomplete="current-password" autofocus required>
<button type="submit">Log in</button></form></div>`;
  return c.html(
    page("Log in", body, { nonce: nonceOf(c), nav: false }),
    status as 200,
    PAGE_HEADERS,
  );
}

/**
 * The login pages: `GET /ui/login` (the form), `POST /ui/login` (the token it sends, checked
 * and kept as a signed cookie) and `POST /ui/logout`.
 */
function addLoginRoutes(app: Hono, deps: UiDeps): void {
  app.get("/ui/login", (c) => loginPage(c, 200, null));

  app.post("/ui/login", async (c) => {
    // Refusals are thrown: `onError` answers them with the form again, by the error table.
    const bytes = await readBody(c.req.raw, {
      maxBodyBytes: MAX_LOGIN_BYTES,
      bodyTimeoutMs: deps.config.bodyTimeoutMs,
    });
    const token = new URLSearchParams(new TextDecoder().decode(bytes)).get("token") ?? "";
    if (token.length > MAX_TOKEN_CHARS) {
      throw new LimitError("token", `longer than ${MAX_TOKEN_CHARS} characters`);
    }
    await checkAdmin(deps, token);
    const expiresAt = Date.now() + UI_LOGIN_MS;
    const secure = new URL(c.req.url).protocol === "https:" ? "; Secure" : "";
    return c.body(null, 303, {
      location: nextPath(c.req.query("next") ?? null),
      "set-cookie": `${UI_COOKIE}=${loginCookie(deps.adminToken, expiresAt)}; Path=/ui; Max-Age=${
        UI_LOGIN_MS / 1000
      }; HttpOnly; SameSite=Strict${secure}`,
      "cache-control": "no-store",
    });
  });

  app.post("/ui/logout", (c) =>
    c.body(null, 303, {
      location: "/ui/login",
      "set-cookie": `${UI_COOKIE}=; Path=/ui; Max-Age=0; HttpOnly; SameSite=Strict`,
    }));
}

/** The middleware letting through a request with a valid login cookie or the admin token. */
function adminGuard(deps: UiDeps): (c: Context, next: () => Promise<void>) => Promise<void> {
  return async (c, next) => {
    const cookie = readCookie(c.req.header("cookie") ?? null, UI_COOKIE);
    if (cookie !== null && validCookie(cookie, deps.adminToken, Date.now())) return await next();
    const token = bearerToken(c.req.raw);
    if (token === null || token.length > MAX_TOKEN_CHARS) {
      throw new AuthenticationError("The viewer needs the admin token: log in at /ui/login");
    }
    await checkAdmin(deps, token);
    await next();
  };
}

/** The sessions' pages: `/ui` (the list), a session, and a chain's tokens. */
function addSessionRoutes(app: Hono, deps: UiDeps): void {
  app.get("/ui", async (c) => {
    const url = new URL(c.req.url);
    const query = validate(SessionsQuery, c.req.query());
    const meta = metaFilters(url);
    const status = query.status === "" ? undefined : query.status;
    const rewardMin = query.reward_min === "" ? undefined : query.reward_min;
    const rewardMax = query.reward_max === "" ? undefined : query.reward_max;
    const listed = await listSessionSummaries(
      deps.kv,
      { status, metadata: meta.map, minScore: rewardMin, maxScore: rewardMax },
      { limit: query.limit, cursor: deps.cursors.open(SESSIONS_LISTING, query.cursor) },
    );
    const filters = { status, meta: meta.pairs, rewardMin, rewardMax, limit: query.limit };
    const next = deps.cursors.seal(SESSIONS_LISTING, listed.cursor);
    return respond(c, "Sessions", sessionsBody(listed.sessions, filters, next));
  });

  app.get("/ui/sessions/:id", async (c) => {
    const id = c.req.param("id");
    const session = await readSessionSummary(deps.kv, id);
    return respond(c, `Session ${id}`, sessionBody(session, await readTimeline(deps.kv, id)));
  });

  app.get("/ui/sessions/:id/chains/:chain", async (c) => {
    const query = validate(TokensQuery, c.req.query());
    const id = c.req.param("id");
    const chainPage = await readChainPage(deps.kv, id, c.req.param("chain"), {
      from: query.from,
      turn: query.turn,
      size: query.size,
    });
    const decode = (tokenId: number) => deps.tokenizer.decode([tokenId]);
    return respond(
      c,
      `Chain ${chainPage.header.id}`,
      tokensBody(id, chainPage, query.size, decode),
      200,
      true,
    );
  });
}

/** The rollouts' pages: `/ui/rollouts` (the groups) and a group with its jobs. */
function addRolloutRoutes(app: Hono, deps: UiDeps): void {
  app.get("/ui/rollouts", async (c) => {
    const query = validate(GroupsQuery, c.req.query());
    const cursor = deps.cursors.open(GROUPS_LISTING, query.cursor);
    const listed = await listRolloutGroups(deps.kv, { limit: 50, cursor });
    const groups = [];
    for (const group of listed.groups) {
      const summary = summarizeGroup(group, await listGroupJobs(deps.kv, group));
      groups.push({ summary, harness: harnessOf(group.settings) });
    }
    return respond(
      c,
      "Rollouts",
      groupsBody(groups, deps.cursors.seal(GROUPS_LISTING, listed.cursor)),
    );
  });

  app.get("/ui/rollouts/:group", async (c) => {
    const id = c.req.param("group");
    const group = GROUP_ID.test(id) ? await getRolloutGroup(deps.kv, id) : null;
    if (!group) throw new JobNotFoundError(id, "group");
    const records = await listGroupJobs(deps.kv, group);
    const jobs = await Promise.all(records.map((job) => readJobSummary(deps.kv, job.id)));
    const toolTurns = new Map(
      records.flatMap((job) => job.toolTurns === undefined ? [] : [[job.id, job.toolTurns]]),
    );
    return respond(
      c,
      `Group ${id}`,
      groupBody(summarizeGroup(group, records), harnessOf(group.settings), jobs, toolTurns),
    );
  });
}

/**
 * The viewer's error handler: each error counted by its code, and answered as a page with its
 * status, or the login form (a refused login, or a page refused for want of the token).
 */
function errorPage(deps: UiDeps): ErrorHandler {
  return (error, c) => {
    const { code, status, message } = describeError(error);
    deps.metrics.errors.inc(code);
    // A refused login shows why; any other page refused for want of the token shows the form.
    if (c.req.path === "/ui/login") return loginPage(c, status, message);
    if (status === 401) return loginPage(c, 401, null);
    const body = html`
      <h1>${status}</h1>
      <p class="error">${message}</p>
    `;
    return c.html(page("Error", body, { nonce: nonceOf(c) }), status as 400, PAGE_HEADERS);
  };
}

/** The request's nonce, the only one its page's policy admits a script by (`viewerSecurity`). */
function nonceOf(c: Context): string {
  return (c.get as (key: string) => unknown)("secureHeadersNonce") as string;
}

export default lazyApp(createUiApp);
