/**
 * A scripted engine and an SGLang client wired together for the engine tests.
 *
 * @module
 */
import { samplingParams } from "../../lib/engine/sampling.ts";
import { EngineHttpWorker, SglangClient } from "../../lib/engine/mod.ts";
import { type Script, startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";

export const PROMPT = [151_644, 872, 198, 9707, 151_645, 198, 151_644, 77_091, 198];
export const RID = /^[0-9a-f]{32}$/;

/**
 * Where a client's requests are made, each test run both ways: on the test's thread, and on an
 * engine HTTP worker (one per test process, as the gateway has one).
 */
export const TRANSPORTS: readonly { label: string; httpWorker: EngineHttpWorker | undefined }[] = [
  { label: "", httpWorker: undefined },
  { label: " (engine HTTP worker)", httpWorker: new EngineHttpWorker() },
];

export function sampling(maxTokens = 256, stop?: string[]) {
  return samplingParams({ maxTokens, stop }, {
    promptLength: PROMPT.length,
    contextLength: 40_960,
    stopIds: [151_645],
  });
}

/** A client and a scripted engine for one test, closed by `run`'s end. */
export async function withEngine(
  options: {
    script?: Script | string[];
    latencyMs?: number;
    timeoutMs?: number;
    maxResumes?: number;
    incrementalStreaming?: boolean;
    httpWorker?: EngineHttpWorker;
  },
  run: (ctx: {
    engine: Awaited<ReturnType<typeof startScriptedEngine>>;
    client: SglangClient;
    tokenizer: Awaited<ReturnType<typeof qwen3>>;
  }) => Promise<void>,
) {
  const tokenizer = await qwen3();
  const engine = await startScriptedEngine({
    tokenizer,
    script: options.script,
    latencyMs: options.latencyMs,
    incrementalStreaming: options.incrementalStreaming,
  });
  const client = new SglangClient(engine.url, {
    connections: 4,
    timeoutMs: options.timeoutMs ?? 30_000,
    maxResumes: options.maxResumes,
    httpWorker: options.httpWorker,
  });
  try {
    await run({ engine, client, tokenizer });
  } finally {
    await client.close();
    await engine.close();
  }
}

/** Resolves once `condition` holds, checking on each timer turn; rejects after `ms`. */
export async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("Condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Runs `run` against a bare HTTP server answering `/generate` with `handler`. */
export async function withServer(
  handler: (request: Request) => Response | Promise<Response>,
  run: (client: SglangClient) => Promise<void>,
  httpWorker?: EngineHttpWorker,
) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    if (new URL(request.url).pathname === "/abort_request") return new Response(null);
    return await handler(request);
  });
  const client = new SglangClient(`http://127.0.0.1:${server.addr.port}`, {
    connections: 2,
    timeoutMs: 5_000,
    httpWorker,
  });
  try {
    await run(client);
  } finally {
    await client.close();
    await server.shutdown();
  }
}
