/**
 * Sends fuzz cases to a gateway — through `app.request()` or over a real socket — checks each
 * response, tallies statuses and findings, and keeps the world up to date with what the
 * gateway handed out (sessions, cursors, jobs).
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { TestGateway } from "../_gateway.ts";
import type { FuzzCase, FuzzWorld } from "./case.ts";
import type { RecordedRequest } from "./message_bases.ts";
import { EvaluateBody } from "./cases_jobs.ts";
import { checkResponse, type Finding } from "./check.ts";
import { generateCase } from "./generate.ts";

/** Longest a request may take before it counts as hung (a guard, never waited out on success). */
const HANG_MS = 30_000;

/** What a run saw. */
export class Tally {
  readonly byStatus = new Map<number, number>();
  readonly byEndpoint = new Map<string, Map<number, number>>();
  readonly findings: Finding[] = [];
  /** Milliseconds spent per route, to keep the run bounded. */
  readonly msByEndpoint = new Map<string, number>();
  sent = 0;
  /** Valid evaluations past the budget, not sent. */
  skipped = 0;
  evaluations = 0;

  count(endpoint: string, status: number): void {
    this.sent++;
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    const row = this.byEndpoint.get(endpoint) ?? new Map<number, number>();
    row.set(status, (row.get(status) ?? 0) + 1);
    this.byEndpoint.set(endpoint, row);
  }

  /** `fuzz: N requests · 200: … · 5xx: K`. */
  summary(label: string): string {
    const statuses = [...this.byStatus.entries()].sort(([a], [b]) => a - b);
    const fives = statuses.filter(([s]) => s >= 500).reduce((sum, [, n]) => sum + n, 0);
    return [
      `${label}: ${this.sent} requests`,
      ...statuses.filter(([s]) => s < 500).map(([s, n]) => `${s}: ${n}`),
      `5xx: ${fives}`,
    ].join(" · ");
  }
}

/** Options of {@linkcode runCases}. */
export interface RunOptions {
  readonly seed: number;
  /** Indexes of the cases to send (each regenerates from the seed). */
  readonly from: number;
  readonly count: number;
  /** Over the gateway's socket instead of `app.request()`. */
  readonly http: boolean;
  /** Valid evaluations to run at most (they boot sandboxes). */
  readonly maxEvaluations: number;
}

/** Generates, sends and checks cases `from … from + count - 1`. */
export async function runCases(
  gw: TestGateway,
  world: FuzzWorld,
  recorded: readonly RecordedRequest[],
  tally: Tally,
  options: RunOptions,
): Promise<void> {
  for (let index = options.from; index < options.from + options.count; index++) {
    await keepSessions(gw, world);
    const fuzzCase = generateCase(options.seed, index, world, recorded);
    if (fuzzCase.endpoint === "POST /evaluate" && validEvaluation(fuzzCase, world)) {
      if (tally.evaluations >= options.maxEvaluations) {
        tally.skipped++;
        continue;
      }
      tally.evaluations++;
    }
    let response: Response;
    const started = performance.now();
    // What the gateway logs as unexpected belongs to the request in flight: one at a time.
    const logged: string[] = [];
    const consoleError = console.error;
    console.error = (...args: unknown[]) => void logged.push(args.map(logText).join(" "));
    try {
      response = await withGuard(send(gw, fuzzCase, options.http, index));
    } catch (error) {
      console.error = consoleError;
      tally.count(fuzzCase.endpoint, 0);
      tally.findings.push({
        kind: "crash",
        fuzzCase,
        status: 0,
        body: String((error as Error)?.stack ?? error),
        problem: "the request threw or hung",
      });
      continue;
    }
    const { status, text, finding } = await checkResponse(fuzzCase, response).finally(() => {
      console.error = consoleError;
    });
    tally.count(fuzzCase.endpoint, status);
    const ms = performance.now() - started;
    tally.msByEndpoint.set(
      fuzzCase.endpoint,
      (tally.msByEndpoint.get(fuzzCase.endpoint) ?? 0) + ms,
    );
    if (finding) {
      tally.findings.push(logged.length > 0 ? { ...finding, logged: logged.join("\n") } : finding);
    }
    const lost = await roundTripProblem(gw, world, fuzzCase, status, text);
    if (lost) {
      tally.findings.push({ kind: "roundtrip", fuzzCase, status, body: text, problem: lost });
    }
    learn(world, fuzzCase, status, text);
  }
}

function logText(value: unknown): string {
  return value instanceof Error ? (value.stack ?? String(value)) : String(value);
}

function send(gw: TestGateway, c: FuzzCase, overSocket: boolean, index: number): Promise<Response> {
  // Deno's fetch refuses URLs of tens of kilobytes: those go through app.request() instead.
  const http = overSocket && c.path.length <= 8_192;
  // Over a socket, Deno's own HTTP server refuses very long headers before the gateway sees them.
  const headers = http
    ? Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k, v.slice(0, 8_192)]))
    : c.headers;
  const init: RequestInit = { method: c.method, headers };
  if (c.body !== null) {
    // Every other body over the socket is chunked: no content-length, read with a cap.
    init.body = http && index % 2 === 1 ? new Blob([c.body]).stream() : c.body;
  }
  return http ? fetch(`${gw.url}${c.path}`, init) : Promise.resolve(gw.app.request(c.path, init));
}

async function withGuard(response: Promise<Response>): Promise<Response> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no response in ${HANG_MS} ms`)), HANG_MS);
  });
  try {
    return await Promise.race([response, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when the gateway would run this evaluation (admin token, a body the schema takes). */
function validEvaluation(c: FuzzCase, world: FuzzWorld): boolean {
  const auth = c.headers.authorization ?? c.headers["x-api-key"] ?? "";
  if (!auth.includes(world.adminToken) || c.body === null) return false;
  try {
    return EvaluateBody.safeParse(JSON.parse(new TextDecoder().decode(c.body))).success;
  } catch {
    return false;
  }
}

/** Keeps at least three sessions open for turns, opening them outside the count. */
async function keepSessions(gw: TestGateway, world: FuzzWorld): Promise<void> {
  while (world.sessions.filter((s) => !world.closed.has(s.id)).length < 3) {
    world.sessions.push(await gw.openSession({ pool: "fuzz" }));
  }
}

/**
 * What a stored value lost on its way: the metadata a session opened with must be the metadata
 * it shows, and a reward must come back as it was sent (JSON's own rounding aside).
 */
async function roundTripProblem(
  gw: TestGateway,
  world: FuzzWorld,
  c: FuzzCase,
  status: number,
  text: string,
): Promise<string | null> {
  const opened = c.endpoint === "POST /sessions" && status === 201;
  const rewarded = c.endpoint === "POST /sessions/:id/reward" && status === 200;
  if (!opened && !rewarded) return null;
  const json = (value: unknown) => JSON.parse(JSON.stringify(value ?? null));
  const sent = JSON.parse(new TextDecoder().decode(c.body!));
  if (rewarded) {
    const shown = JSON.parse(text).reward;
    return isDeepStrictEqual(json(shown), json(sent))
      ? null
      : `reward shown as ${JSON.stringify(shown).slice(0, 300)}`;
  }
  const { id } = JSON.parse(text);
  const view = await gw.app.request(`/sessions/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${world.adminToken}` },
  });
  const shown = (await view.json()).metadata;
  return isDeepStrictEqual(json(shown), json(sent.metadata ?? {}))
    ? null
    : `metadata shown as ${JSON.stringify(shown).slice(0, 300)}`;
}

/** Records the ids, tokens and cursors a response handed out. */
function learn(world: FuzzWorld, c: FuzzCase, status: number, text: string): void {
  const json = () => {
    try {
      return JSON.parse(text);
    } catch {
      return null;
    }
  };
  if (c.endpoint === "POST /sessions" && status === 201) {
    const body = json();
    if (body?.id && body?.token) world.sessions.push({ id: body.id, token: body.token });
  } else if (c.endpoint === "GET /sessions" && status === 200) {
    const cursor = json()?.next_cursor;
    if (typeof cursor === "string" && world.cursors.length < 50) world.cursors.push(cursor);
  } else if (c.endpoint === "POST /rollout" && status === 202) {
    const body = json();
    if (body?.group_id) world.groupIds.push(body.group_id);
    for (const job of body?.jobs ?? []) if (world.jobIds.length < 500) world.jobIds.push(job.id);
  } else if (c.endpoint === "POST /v1/messages" && status === 200) {
    world.lastTurn = c;
  } else if (c.endpoint === "POST /sessions/:id/close" && status === 200) {
    const id = json()?.id;
    if (typeof id === "string") world.closed.add(id);
  } else if (c.endpoint === "DELETE /sessions/:id" && status === 204) {
    let id = "";
    try {
      id = decodeURIComponent(c.path.slice("/sessions/".length));
    } catch { /* not an id this world knows */ }
    const at = world.sessions.findIndex((s) => s.id === id);
    if (at >= 0) world.sessions.splice(at, 1);
  }
}
