/**
 * The placement step of `deno task bench`: Claude-Code-sized sessions (`_claude_code_load.ts`: a
 * recorded Claude Code system prompt and tools, project notes, ~600 tokens of tool output a
 * turn), all at once, over 8 scripted engine workers, each with a prefix cache of 2M tokens (LRU),
 * placed five ways:
 *
 * - `random`: one URL, a router sending each request to a worker drawn at random (round robin
 *   behaves alike for a chain whose turns arrive among many others', unless every session moves in
 *   lock-step, as they do here with an engine that answers at once);
 * - `router + key`: one URL, a router placing by `X-SMG-Routing-Key` (`ENGINE_PLACEMENT=router`);
 * - `gateway`: the gateway's own placement over the workers (`ENGINE_PLACEMENT=gateway`);
 * - `gateway + sessions`: the same with engine sessions (`ENGINE_SESSIONS=true`);
 * - `… worker killed`: the same, one worker killed once half the turns are done.
 *
 * For each it prints the share of later turns' prompt tokens the engine served from its cache
 * (turns after a chain's first), their prefill tokens per sampled token, the bytes sent to the engine
 * per later turn (p50), and the turns lost (a request that failed) or forked (a session whose
 * turns did not all land on one chain, appended in order). The gateway runs in this process, the
 * workers and the routers too; nothing here is timed.
 *
 * `BENCH_PLACEMENT_SESSIONS` (256), `BENCH_PLACEMENT_TURNS` (20); `BENCH_FAST=1` (see
 * `_harness.ts`): 8 sessions × 4 turns.
 *
 * @module
 */
import type { RawTurn } from "../lib/segment/mod.ts";
import { resolveConfig } from "../lib/config/mod.ts";
import { type EngineCall, startScriptedFleet } from "../lib/scripted_engine/mod.ts";
import { loadTokenizer } from "../lib/tokenizer/mod.ts";
import { buildDeps } from "../functions/_deps.ts";
import { createGatewayApp } from "../functions/serve.ts";
import { ADMIN, percentile, REPLY, setting } from "./_harness.ts";
import { answered, body, opening } from "./_claude_code_load.ts";
import { startRouter } from "./_router.ts";

const SESSIONS = Number(setting("BENCH_PLACEMENT_SESSIONS", 256, 8));
const TURNS = Number(setting("BENCH_PLACEMENT_TURNS", 20, 4));
const WORKERS = 8;
/** Tokens each worker's prefix cache holds. */
const CACHE_TOKENS = 2_000_000;

type Mode = "random" | "router + key" | "gateway" | "gateway + sessions" | "worker killed";
const MODES: readonly Mode[] = [
  "random",
  "router + key",
  "gateway",
  "gateway + sessions",
  "worker killed",
];

interface Outcome {
  readonly mode: Mode;
  /** Later turns' prompt tokens, and those served from cache. */
  readonly prompt: number;
  readonly cached: number;
  readonly sampled: number;
  readonly bytes: number[];
  readonly lost: number;
  readonly forked: number;
  readonly failovers: number;
}

const tokenizer = await loadTokenizer(resolveConfig({}).tokenizerPath);

async function run(mode: Mode): Promise<Outcome> {
  const calls = new Map<string, EngineCall>();
  const fleet = await startScriptedFleet(WORKERS, {
    tokenizer,
    script: () => REPLY,
    keepLog: false,
    prefixCacheEntries: 100_000,
    prefixCacheTokens: CACHE_TOKENS,
    // Every call by its request id (a turn's first call keeps the turn's id).
    onAnswer: (call) => void calls.set(call.rid, call),
  });
  const router = mode === "random" || mode === "router + key"
    ? startRouter(fleet.urls, mode === "random" ? "random" : "routing_key")
    : null;
  const dir = await Deno.makeTempDir({ prefix: "bench-placement-" });
  const config = resolveConfig({
    KV_PATH: `${dir}/bench.kv`,
    ADMIN_TOKEN: ADMIN,
    CONTEXT_LENGTH: "200000",
    ROLLOUT_WORKER: "false",
    ...(router
      ? { ENGINE_URL: router.url, ENGINE_PLACEMENT: mode === "random" ? "none" : "router" }
      : { ENGINE_PLACEMENT: "gateway", ENGINE_WORKERS: fleet.urls.join(",") }),
    ...(mode === "gateway + sessions" || mode === "worker killed"
      ? { ENGINE_SESSIONS: "true" }
      : {}),
  });
  const deps = await buildDeps(config, { tokenizer });
  const app = createGatewayApp(deps);
  const post = async (path: string, token: string, text: string) => {
    const bytes = new TextEncoder().encode(text);
    const response = await app.fetch(
      new Request(`http://gateway${path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "content-length": String(bytes.length),
        },
        body: bytes,
      }),
    );
    const json = await response.json();
    if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  let done = 0;
  let lost = 0;
  let killed = false;
  const ids: string[] = [];
  await Promise.all(Array.from({ length: SESSIONS }, async (_, s) => {
    const session = await post("/sessions", ADMIN, "{}");
    ids.push(session.id);
    const messages = opening(s);
    for (let turn = 0; turn < TURNS; turn++) {
      let reply;
      try {
        reply = await post("/v1/messages", session.token, body(messages));
      } catch {
        lost++;
        return;
      }
      if (mode === "worker killed" && !killed && ++done >= SESSIONS * TURNS / 2) {
        killed = true;
        await fleet.workers[3].kill();
      }
      answered(messages, reply, 7 + s * 31 + turn);
    }
  }));
  let prompt = 0;
  let cached = 0;
  let sampled = 0;
  let forked = 0;
  let failovers = 0;
  const bytes: number[] = [];
  for (const id of ids) {
    const response = await app.fetch(
      new Request(`http://gateway/sessions/${id}/samples?format=raw`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      }),
    );
    const { chains } = await response.json();
    const turns: RawTurn[] = chains[0]?.turns ?? [];
    const appended = turns.every((turn, i) =>
      i === 0 ? turn.route === "start" : turn.route === "append"
    );
    if (chains.length !== 1 || !appended) forked++;
    for (const turn of turns) {
      if (turn.flags.includes("engine_failover")) failovers++;
      if (turn.index === 0) continue;
      sampled += turn.output_len;
      prompt += turn.input_len;
      cached += turn.cached_tokens ?? 0;
      const call = calls.get(turn.rid);
      if (call?.bodyBytes !== undefined) bytes.push(call.bodyBytes);
    }
  }
  await deps.close();
  await router?.close();
  await fleet.close();
  await Deno.remove(dir, { recursive: true });
  return { mode, prompt, cached, sampled, bytes, lost, forked, failovers };
}

console.log(
  `placement: ${SESSIONS} Claude-Code-sized sessions × ${TURNS} turns over ${WORKERS} workers ` +
    `(prefix cache ${CACHE_TOKENS / 1e6}M tokens each)`,
);
console.log(
  "  mode                 later turns cached   prefill/sampled   bytes/later turn (p50)   " +
    "lost  forked  failovers",
);
const outcomes = new Map<Mode, Outcome>();
for (const mode of MODES) {
  const outcome = await run(mode);
  outcomes.set(mode, outcome);
  const share = outcome.prompt === 0 ? 0 : outcome.cached / outcome.prompt;
  const prefill = (outcome.prompt - outcome.cached) / Math.max(1, outcome.sampled);
  const bytes = outcome.bytes.length ? percentile(outcome.bytes, 0.5) : 0;
  console.log(
    `  ${mode.padEnd(20)} ${(100 * share).toFixed(1).padStart(10)}%   ${
      prefill.toFixed(1).padStart(15)
    }   ${bytes.toFixed(0).padStart(22)}   ${String(outcome.lost).padStart(4)}  ${
      String(outcome.forked).padStart(6)
    }  ${String(outcome.failovers).padStart(9)}`,
  );
}

const share = (mode: Mode) => outcomes.get(mode)!.cached / Math.max(1, outcomes.get(mode)!.prompt);
const prefill = (mode: Mode) => outcomes.get(mode)!.prompt - outcomes.get(mode)!.cached;
const bytes = (mode: Mode) => percentile(outcomes.get(mode)!.bytes, 0.5);
const failures = [...outcomes.values()].reduce((sum, o) => sum + o.lost + o.forked, 0);
console.log(
  `  goals: placed by the gateway ${(100 * share("gateway")).toFixed(1)}% cached (≥ 95%: ${
    share("gateway") >= 0.95 ? "met" : "NOT met"
  }), ${(prefill("random") / Math.max(1, prefill("gateway"))).toFixed(1)}× less prefill than ` +
    `random; engine sessions send ${
      (bytes("gateway + sessions") / bytes("gateway")).toFixed(3)
    }× ` +
    `the bytes; ${failures} turns lost or forked (0: ${failures === 0 ? "met" : "NOT met"})`,
);
