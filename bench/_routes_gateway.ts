/**
 * A routes bench gateway in a process of its own, as a gateway runs: its own heap, event loop and
 * store thread, so one gateway's collections and left-over work land on its own turns and not on
 * the other's (`bench/routes_bench.ts` takes turns on two). Run as a script it starts a bench
 * gateway (`startBenchGateway`) and serves its app over HTTP on a loopback port, as a gateway
 * serves its clients, with what the bench reads besides under `/__bench/`; the bench starts it
 * with {@linkcode startRoutesGateway}, which speaks to it.
 *
 * A turn is timed in here, from the app's handler being called to its reply's last byte (the
 * request read from the socket, the reply not yet written to it), with the turn's record (its
 * engine call's wall time and the engine's own account) read from the gateway's store after.
 *
 * @module
 */
import type { TurnRecord } from "../lib/chain/mod.ts";
import { keys } from "../lib/kv/mod.ts";
import { getChain, readAllTurns, readChainTokens, readLiveTurns } from "../lib/session/mod.ts";
import { ADMIN, type BenchGateway, firstLine, startBenchGateway } from "./_harness.ts";

/** One measured turn's figures, in ms (see `bench/routes_bench.ts`). */
export interface TurnFigures {
  /** The turn less its engine call's wall time. */
  readonly gatewayMs: number;
  /** The engine call's wall time less the engine's own account. */
  readonly transportMs: number;
  /** CPU the gateway's main thread spent on the turn (NaN where Linux's schedstat is missing). */
  readonly loopMs: number;
  /**
   * The turn's wall time after its record was built, and before its preparing began (the
   * request's reading).
   */
  readonly commitMs: number;
}

/** The bench's side of a gateway process. */
export interface RoutesGateway {
  readonly engineUrl: string;
  /** A new session: its id and token. */
  session(): Promise<{ id: string; token: string }>;
  /** POSTs a Messages request (JSON text) for the session; the reply, and the turn's figures. */
  turn(sessionId: string, token: string, body: string): Promise<{
    // deno-lint-ignore no-explicit-any
    reply: any;
    figures: TurnFigures;
  }>;
  /** The chain's last turn record. */
  lastTurn(sessionId: string): Promise<TurnRecord>;
  /** The prompt the chain's last turn read, from its recorded tokens. */
  lastPrompt(sessionId: string): Promise<number[]>;
  /** The session's routes as stored: their bytes, and the rows its turns name. */
  stored(sessionId: string): Promise<{ bytes: number; rows: number }>;
  /** The process's heap after a collection, in bytes. */
  heap(): Promise<number>;
  close(): Promise<void>;
}

/** Starts a gateway process with `env` over a scripted engine process with `engineEnv`. */
export async function startRoutesGateway(
  env: Record<string, string>,
  engineEnv: Record<string, string>,
): Promise<RoutesGateway> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--v8-flags=--expose-gc",
      new URL(import.meta.url).pathname,
      JSON.stringify(env),
      JSON.stringify(engineEnv),
    ],
    // Never written: closed when the bench is done with it or ends, however it ends (the gateway
    // then closes).
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const { line, drained } = await firstLine(child.stdout, "routes bench gateway");
  const { url, engineUrl } = JSON.parse(line);
  const post = async (path: string, body: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
    const json = await response.json();
    if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
    return { json, headers: response.headers };
  };
  const ask = async (op: string, args: unknown) =>
    (await post(`/__bench/${op}`, JSON.stringify(args))).json;
  return {
    engineUrl,
    session: async () => (await post("/sessions", "{}", { authorization: `Bearer ${ADMIN}` })).json,
    turn: async (sessionId, token, body) => {
      const { json, headers } = await post("/v1/messages", body, {
        authorization: `Bearer ${token}`,
        [SESSION_HEADER]: sessionId,
      });
      return { reply: json, figures: JSON.parse(headers.get(FIGURES_HEADER)!) };
    },
    lastTurn: (sessionId) => ask("last", { sessionId }),
    lastPrompt: (sessionId) => ask("prompt", { sessionId }),
    stored: (sessionId) => ask("stored", { sessionId }),
    heap: async () => (await ask("heap", {})).bytes,
    close: async () => {
      await child.stdin.close();
      await child.status;
      await drained;
    },
  };
}

/** The session a timed turn is of, from the bench; the turn's figures go back in the other. */
const SESSION_HEADER = "x-bench-session";
const FIGURES_HEADER = "x-bench-figures";

/** The main thread's CPU time so far in ms (Linux: its schedstat); NaN where there is none. */
function mainThreadMs(): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${Deno.pid}/task/${Deno.pid}/schedstat`);
    return Number(stat.split(" ")[0]) / 1e6;
  } catch {
    return NaN;
  }
}

async function lastTurn(gw: BenchGateway, sessionId: string): Promise<TurnRecord> {
  // The last alone: reading every turn after each would make garbage in the gateway's process.
  const prefix = keys.turns(sessionId, "c0");
  for await (const entry of gw.deps.kv.list<TurnRecord>({ prefix }, { reverse: true, limit: 1 })) {
    return entry.value;
  }
  throw new Error("No turn recorded");
}

async function lastPrompt(gw: BenchGateway, sessionId: string): Promise<number[]> {
  const last = await lastTurn(gw, sessionId);
  const header = (await getChain(gw.deps.kv, sessionId, "c0")).value!;
  const live = await readLiveTurns(gw.deps.kv, header);
  const tokens = await readChainTokens(gw.deps.kv, sessionId, "c0", live);
  const prompt: number[] = [];
  live.forEach((turn, i) => {
    prompt.push(...tokens[i].delta);
    if (turn.rid !== last.rid) prompt.push(...tokens[i].output, ...tokens[i].closing);
  });
  return prompt;
}

async function stored(gw: BenchGateway, sessionId: string) {
  let bytes = 0;
  const prefix = keys.sessionRoutes(sessionId);
  for await (const entry of gw.deps.kv.list<Uint8Array>({ prefix })) bytes += entry.value.length;
  const turns = await readAllTurns(gw.deps.kv, sessionId, "c0");
  return { bytes, rows: turns.reduce((n, turn) => n + (turn.routes?.rows ?? 0), 0) };
}

async function serve(gw: BenchGateway): Promise<void> {
  const bench = async (op: string, args: { sessionId: string }): Promise<Response> => {
    try {
      return await answerBench(op, args);
    } catch (error) {
      return Response.json({ error: String(error) }, { status: 500 });
    }
  };
  const answerBench = async (op: string, args: { sessionId: string }): Promise<Response> => {
    switch (op) {
      case "last":
        return Response.json(await lastTurn(gw, args.sessionId));
      case "prompt":
        return Response.json(await lastPrompt(gw, args.sessionId));
      case "stored":
        return Response.json(await stored(gw, args.sessionId));
      case "heap":
        (globalThis as { gc?: () => void }).gc?.();
        return Response.json({ bytes: Deno.memoryUsage().heapUsed });
      default:
        return Response.json({ error: `no ${op}` }, { status: 404 });
    }
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    if (path.startsWith("/__bench/")) {
      return bench(path.slice("/__bench/".length), await req.json());
    }
    const sessionId = req.headers.get(SESSION_HEADER);
    if (sessionId === null) return gw.handler(req);
    const started = performance.now();
    const cpu = mainThreadMs();
    const response = await gw.handler(req);
    const body = await response.arrayBuffer();
    const total = performance.now() - started;
    const loopMs = mainThreadMs() - cpu;
    // A refused turn recorded nothing: its figures would be the turn's before.
    if (!response.ok) return new Response(body, response);
    const { timings } = await lastTurn(gw, sessionId);
    const figures: TurnFigures = {
      gatewayMs: total - timings.engineMs,
      transportMs: timings.engineMs - timings.engineReportedMs,
      loopMs,
      commitMs: total - timings.totalMs,
    };
    const headers = new Headers(response.headers);
    headers.set(FIGURES_HEADER, JSON.stringify(figures));
    return new Response(body, { status: response.status, headers });
  });
  // The bench done or gone (its end of stdin closed): the gateway closes, its engine with it.
  (async () => {
    for await (const _ of Deno.stdin.readable);
    await server.shutdown();
  })();
  const { port } = server.addr as Deno.NetAddr;
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}`, engineUrl: gw.engineUrl }));
  await server.finished;
  await gw.close();
}

if (import.meta.main) {
  const [env, engineEnv] = Deno.args.map((arg) => JSON.parse(arg));
  await serve(await startBenchGateway(env, engineEnv));
}
