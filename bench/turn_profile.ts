/**
 * `deno task profile`: where a Claude-Code-sized turn's CPU time goes in the gateway. The bench
 * gateway (`_harness.ts`: a KV file, the zero-latency scripted engine in its own process) serves on
 * a socket in this process. A driver in another process runs the load bench's conversation
 * (`_claude_code_load.ts`; 64 sessions of 6 turns by default). V8's sampling profiler
 * (`node:inspector`) records this process's main thread meanwhile.
 *
 * Each sample goes to the innermost frame that names a part of the turn (see `PARTS`). The output
 * is milliseconds per turn by part, and the busiest functions by self time. Threads other than the
 * main one (KV's SQLite writer, V8's helpers) are not sampled; the load bench's `CPU ms/turn`
 * counts them.
 *
 * `PROFILE_SESSIONS`, `PROFILE_TURNS` change the load; `PROFILE_TOP` is how many functions each
 * part lists (3), `PROFILE_FLAT` how many of the busiest functions overall (15);
 * `PROFILE_OUT=file.cpuprofile` keeps the profile for Chrome DevTools.
 *
 * @module
 */
import { Session } from "node:inspector/promises";
import { startBenchGateway } from "./_harness.ts";
import { sweep } from "./_claude_code_load.ts";

const SESSIONS = Number(Deno.env.get("PROFILE_SESSIONS") ?? 64);
const TURNS = Number(Deno.env.get("PROFILE_TURNS") ?? 6);
/** Functions listed under each part. */
const TOP = Number(Deno.env.get("PROFILE_TOP") ?? 3);

/**
 * The parts of a turn, each by its frames' `url#function`; a sample counts for the innermost
 * frame that matches one, so JSON.stringify under an identity is the identity's.
 */
const PARTS: readonly { name: string; frame: RegExp }[] = [
  {
    name: "encode new text",
    frame:
      /transformers.*#(pre_tokenize\w*|bpe|encode\w*|_call|regex_split)$|lib\/template\/(byte_level|bpe_cache|split_step|section_cache|plain_text)\.ts/,
  },
  {
    name: "chat template (render)",
    frame: /transformers.*#(apply_chat_template|render|evaluate\w*|toJSON)$/,
  },
  { name: "decode output", frame: /transformers.*#decode\w*$|lib\/template\/decode_stream\.ts/ },
  { name: "read and check the request", frame: /functions\/_http\.ts|lib\/limits\/|zod\// },
  {
    name: "identities and routing",
    frame:
      /lib\/(anthropic\/identity|chat\/prefix_digest|session\/route\w*)\.ts|lib\/anthropic\/(messages_turn|lower_request)\.ts/,
  },
  { name: "engine call", frame: /lib\/engine\/|undici\// },
  {
    name: "parse output, build reply",
    frame:
      /lib\/template\/(parse_output|tool_parser|reasoning_parser|stream_output)\.ts|lib\/anthropic\/(build_response|stream_response)\.ts/,
  },
  { name: "KV (leases, reads, commit)", frame: /lib\/kv\/|ext:deno_kv/ },
  { name: "turn bookkeeping", frame: /lib\/(session|chain|metrics)\// },
  { name: "HTTP server", frame: /ext:deno_http|functions\// },
  { name: "garbage collector", frame: /#\(garbage collector\)$/ },
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

if (Deno.args[0] === "--drive") {
  const [, url, count, salt] = Deno.args;
  const { elapsed } = await sweep(url, Number(count), TURNS, Number(salt));
  console.log(JSON.stringify({ elapsed }));
  Deno.exit(0);
}

const gateway = await startBenchGateway({ ROLLOUT_WORKER: "false" });
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, gateway.handler);
const url = `http://127.0.0.1:${server.addr.port}`;

/** Runs the driver in its own process, so its work is not in the profile. */
async function drive(count: number, salt: number): Promise<number> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", import.meta.filename!, "--drive", url, String(count), String(salt)],
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error("the profile's driver failed");
  return JSON.parse(new TextDecoder().decode(output.stdout)).elapsed;
}

await drive(16, 1); // warm-up: JIT, caches, the section cache's system prompt and tools
const inspector = new Session();
inspector.connect();
await inspector.post("Profiler.enable");
await inspector.post("Profiler.setSamplingInterval", { interval: 250 });
await inspector.post("Profiler.start");
const elapsed = await drive(SESSIONS, 2);
const { profile } = await inspector.post("Profiler.stop") as { profile: Profile };
inspector.disconnect();
await server.shutdown();
await gateway.close();
const out = Deno.env.get("PROFILE_OUT");
if (out) await Deno.writeTextFile(out, JSON.stringify(profile));

const turns = SESSIONS * TURNS;
const parent = new Map<number, ProfileNode>();
const byId = new Map<number, ProfileNode>();
for (const node of profile.nodes) {
  byId.set(node.id, node);
  for (const child of node.children ?? []) parent.set(child, node);
}
const frameName = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.replace(/^.*\/(node_modules|bench|lib|functions)\//, "$1/");
  return `${functionName || "(anonymous)"} ${file}${url ? `:${lineNumber + 1}` : ""}`;
};
const byPart = new Map<string, number>();
const bySelf = new Map<string, number>();
/** Each part's functions by self time. */
const partFunctions = new Map<string, Map<string, number>>();
let busy = 0;
profile.samples.forEach((id, i) => {
  const micros = profile.timeDeltas[i] ?? 0;
  const leaf = byId.get(id)!;
  const name = leaf.callFrame.functionName;
  if (name === "(idle)" || name === "(program)" || name === "(root)") return;
  const stack: ProfileNode[] = [];
  for (let node: ProfileNode | undefined = leaf; node; node = parent.get(node.id)) stack.push(node);
  // The profiler's own work (collecting the profile at the end) is not the gateway's.
  if (stack.some((node) => node.callFrame.url.endsWith("inspector.js"))) return;
  busy += micros;
  const self = frameName(leaf);
  bySelf.set(self, (bySelf.get(self) ?? 0) + micros);
  let part = "other (runtime, microtasks)";
  for (const node of stack) {
    const where = `${node.callFrame.url}#${node.callFrame.functionName}`;
    const found = PARTS.find((p) => p.frame.test(where));
    if (found) {
      part = found.name;
      break;
    }
  }
  byPart.set(part, (byPart.get(part) ?? 0) + micros);
  const functions = partFunctions.get(part) ?? new Map<string, number>();
  partFunctions.set(part, functions);
  functions.set(self, (functions.get(self) ?? 0) + micros);
});

const perTurn = (micros: number) => (micros / 1000 / turns).toFixed(3).padStart(7);
const share = (micros: number) => `${(100 * micros / busy).toFixed(1).padStart(5)}%`;
console.log(
  `Turn profile — ${SESSIONS} sessions × ${TURNS} turns (the load bench's Claude-Code-sized ` +
    `conversation), ${
      (turns / elapsed).toFixed(0)
    } turns/s; the gateway's main thread, ms per turn ` +
    `(first turns included)\n`,
);
for (const [name, micros] of [...byPart].sort((a, b) => b[1] - a[1])) {
  console.log(`${name.padEnd(30)} ${perTurn(micros)} ${share(micros)}`);
  const top = [...partFunctions.get(name)!].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  for (const [fn, self] of top) console.log(`${"".padEnd(32)}${perTurn(self)}  ${fn}`);
}
console.log(`${"busy".padEnd(30)} ${perTurn(busy)}\n\nbusiest functions (self time):`);
for (
  const [name, micros] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(
    0,
    Number(Deno.env.get("PROFILE_FLAT") ?? 15),
  )
) {
  console.log(`${perTurn(micros)} ${share(micros)}  ${name}`);
}
