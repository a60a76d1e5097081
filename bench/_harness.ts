/**
 * What the benches share: a gateway app over a file KV, driven in-process, against the
 * zero-latency scripted engine running in its own process.
 *
 * @module
 */
import { resolveConfig } from "../lib/config/mod.ts";
import type { MessageParam } from "../lib/anthropic/mod.ts";
import { type ChatTokenizer, loadTokenizer } from "../lib/tokenizer/mod.ts";
import { buildDeps, type Deps } from "../functions/_deps.ts";
import { createGatewayApp } from "../functions/serve.ts";

export const ADMIN = "bench-admin-token-0123456789";
/** Every reply calls a tool, so every turn is followed by a tool result. */
export const REPLY =
  '<tool_call>\n{"name": "Bash", "arguments": {"command": "make test"}}\n</tool_call>';
export const SYSTEM =
  "You are a coding agent. Use the Bash tool to inspect and change the repository.";
export const TOOLS = [{
  name: "Bash",
  description: "Run a shell command.",
  input_schema: {
    type: "object",
    properties: { command: { type: "string" } },
    required: ["command"],
  },
}];

/**
 * Whether the bench runs small (`BENCH_FAST=1`): each step shrinks its load to a few seconds, still
 * running its code paths and printing its figures, which then say little. The test suite runs the
 * whole bench so (`test/process/bench_test.ts`), so that a step that hangs or throws fails it.
 */
export function isFast(): boolean {
  return Deno.env.get("BENCH_FAST") === "1";
}

/**
 * A step's setting: variable `name` when it is set, else the step's `small` value under
 * `BENCH_FAST=1`, else its `full` one.
 */
export function setting(name: string, full: string | number, small: string | number): string {
  return Deno.env.get(name) ?? String(isFast() ? small : full);
}

/** A running bench gateway. */
export interface BenchGateway {
  readonly deps: Deps;
  readonly tokenizer: ChatTokenizer;
  readonly engineUrl: string;
  readonly kvPath: string;
  /** The gateway app's request handler, to serve on a socket (`Deno.serve`). */
  readonly handler: (request: Request) => Response | Promise<Response>;
  /** POSTs `body` (an object, or JSON already serialized) and returns the JSON answer. */
  // deno-lint-ignore no-explicit-any
  call(path: string, token: string, body: unknown): Promise<any>;
  close(): Promise<void>;
}

/** Starts the scripted engine process and a gateway over a fresh KV file. */
export async function startBenchGateway(
  env: Record<string, string> = {},
  engineEnv: Record<string, string> = {},
): Promise<BenchGateway> {
  const engine = await startEngineProcess(engineEnv);
  const dir = await Deno.makeTempDir({ prefix: "bench-" });
  const kvPath = `${dir}/bench.kv`;
  const config = resolveConfig({
    KV_PATH: kvPath,
    ADMIN_TOKEN: ADMIN,
    SGLANG_URL: engine.url,
    CONTEXT_LENGTH: "300000", // the turn bench grows a history to 256k
    ...env,
  });
  const tokenizer = await loadTokenizer(config.tokenizerPath);
  const deps = await buildDeps(config, { tokenizer });
  const app = createGatewayApp(deps);
  return {
    deps,
    tokenizer,
    engineUrl: engine.url,
    kvPath,
    handler: (request) => app.fetch(request),
    call: async (path, token, body) => {
      const bytes = new TextEncoder().encode(
        typeof body === "string" ? body : JSON.stringify(body),
      );
      // As a client sends it: with its length, which the gateway reads the body by.
      const headers = {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "content-length": String(bytes.length),
      };
      const response = await app.fetch(
        new Request(`http://gateway${path}`, { method: "POST", headers, body: bytes }),
      );
      const json = await response.json();
      if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    },
    close: async () => {
      await deps.close();
      engine.process.kill("SIGTERM");
      await engine.process.status;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** A Messages request for the bench conversation. */
export function request(messages: MessageParam[]) {
  return { model: "bench", max_tokens: 256, system: SYSTEM, tools: TOOLS, messages };
}

/** Answers the reply's tool call with `content`, as the agent would. */
export function answer(
  messages: MessageParam[],
  reply: { content: { id?: string }[] },
  content: string,
): void {
  messages.push({ role: "assistant", content: reply.content as MessageParam["content"] });
  messages.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: reply.content[0].id!, content }],
  });
}

/** Tool output of `lines` lines, about 14 tokens each, different per `salt`. */
export function filler(lines: number, salt: number): string {
  return Array.from(
    { length: lines },
    (_, i) => `src/module_${salt}.ts:${i}: const value${i} = compute(${i * salt});`,
  ).join("\n");
}

/** The value below which `fraction` of `values` lie. */
export function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))];
}

export function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

/** Starts the zero-latency scripted engine in its own process, replying with {@linkcode REPLY}. */
export async function startEngineProcess(env: Record<string, string> = {}) {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../fixtures/serve_engine.ts", import.meta.url).pathname],
    env: { SCRIPTED_REPLY: REPLY, ...env },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const { line } = await firstLine(process.stdout, "scripted engine");
  const url = line.match(/listening (\S+)/)?.[1];
  if (!url) throw new Error(`scripted engine said: ${line}`);
  return { url, process };
}

/**
 * The first line a child process prints (what it says once listening). The rest is read on until
 * it ends (`drained`), so that whatever else it prints never fills the pipe.
 *
 * @throws {Error} naming `who` when it ends before a whole line.
 */
export async function firstLine(
  stdout: ReadableStream<Uint8Array>,
  who: string,
): Promise<{ line: string; drained: Promise<void> }> {
  const reader = stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${who} exited before listening`);
    text += value;
  }
  const drained = (async () => {
    while (!(await reader.read()).done);
  })();
  return { line: text.slice(0, text.indexOf("\n")), drained };
}
