/**
 * Test harness: a gateway over the real tokenizer, an in-memory KV and the scripted engine (a
 * real HTTP server, as SGLang is: the gateway calls it over HTTP).
 *
 * Tests drive the gateway with `gw.fetch`, which hands each request to the app in this process,
 * as Hono's `app.request()` does: no socket. The gateway listens on a loopback socket only once
 * something reads `gw.url`, or at start with `worker: true`. A test needs the socket when a
 * client outside this process's `fetch` calls the gateway (a CLI, a subprocess, a browser, a
 * rollout worker's agents and sandboxes, which call the gateway's own URL), or when it tests the
 * connection itself: a client that disconnects or aborts mid-stream, bytes as they reach the
 * wire. A test that starts `deps.rollout` itself reads `gw.url` first.
 *
 * @module
 */
import type { Store } from "../lib/kv/mod.ts";
import { Buffer } from "node:buffer";
import { resolveConfig } from "../lib/config/mod.ts";
import { type ChatTokenizer, loadTokenizer, tokenizerSource } from "../lib/tokenizer/mod.ts";
import type { EncoderPool } from "../lib/template/mod.ts";
import { defaultTokenizerPath } from "../lib/config/mod.ts";
import {
  type EngineCall,
  type Fault,
  type Reply,
  type Script,
  type ScriptedEngine,
  type ScriptedEngineOptions,
  type ScriptedFleet,
  type Spelling,
  startScriptedEngine,
  startScriptedFleet,
} from "../lib/scripted_engine/mod.ts";
import { buildDeps, type Deps, encoderPool } from "../functions/_deps.ts";
import type { RecurringFields } from "../lib/cache/mod.ts";
import { EngineHttpWorker, type MoeShape } from "../lib/engine/mod.ts";
import { createGatewayApp } from "../functions/serve.ts";
import type { Hono } from "hono";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { SandboxBackend } from "../lib/sandbox/mod.ts";

let tokenizer: Promise<ChatTokenizer> | null = null;

/** One encoder pool per served tokenizer and size, shared by this process's test gateways. */
const pools = new Map<string, EncoderPool>();

/**
 * The tokenizer workers a test gateway gets: a pool this process's gateways share, so each test
 * does not load the tokenizer into workers again. The pools live as long as the process.
 */
function sharedPool(served: ChatTokenizer, workers: number): EncoderPool {
  const key = JSON.stringify([tokenizerSource(served), workers]);
  let pool = pools.get(key);
  if (!pool) {
    pool = encoderPool(served, workers);
    pools.set(key, pool);
  }
  return pool;
}

/** The engine HTTP worker this process's test gateways share (it lives as long as the process). */
const sharedHttpWorker = new EngineHttpWorker();

/** The Qwen3 tokenizer, loaded once per test process. */
export function qwen3(): Promise<ChatTokenizer> {
  tokenizer ??= loadTokenizer(defaultTokenizerPath());
  return tokenizer;
}

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/** Headers of a trainer API call with the admin token and a JSON body. */
export const ADMIN_HEADERS = {
  authorization: `Bearer ${ADMIN_TOKEN}`,
  "content-type": "application/json",
};

/**
 * The origin `gw.fetch` resolves a path against. No socket serves it (`.invalid` never resolves):
 * give it to an SDK as its base URL only together with `fetch: gw.fetch`.
 */
export const GATEWAY_ORIGIN = "http://gateway.invalid";

/** A running gateway for one test. */
export interface TestGateway {
  /**
   * The gateway's loopback URL. Reading it opens the socket (once) and makes it the gateway's
   * own URL (`deps.setListening`); read it only where the test needs a socket (see the module
   * doc), and send everything else through {@linkcode TestGateway.fetch}.
   */
  readonly url: string;
  /**
   * Sends a request to the gateway app in this process, as `fetch` would send it over the socket:
   * a path resolves against {@linkcode GATEWAY_ORIGIN}; a body of known length carries its
   * `content-length` and a stream goes without one; redirects are not followed. Recorded in
   * `exchanges`. An SDK takes it as its `fetch` option, with `GATEWAY_ORIGIN` in its base URL.
   */
  readonly fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /**
   * The Anthropic SDK with `apiKey`, talking to this gateway through {@linkcode TestGateway.fetch}
   * (base URL {@linkcode GATEWAY_ORIGIN} unless given); no retries unless asked for.
   */
  anthropic(apiKey: string, options?: ClientOptions): Anthropic;
  /** The OpenAI SDK likewise, with base URL `${GATEWAY_ORIGIN}/v1` unless given. */
  openai(apiKey: string, options?: ClientOptions): OpenAI;
  readonly app: Hono;
  readonly deps: Deps;
  /** The engine (with `workers`, the first worker). */
  readonly engine: ScriptedEngine;
  /** The engine's workers, with `workers`: the gateway places generations on them. */
  readonly fleet: ScriptedFleet | null;
  readonly kv: Store;
  readonly tokenizer: ChatTokenizer;
  /** Every request the gateway received and what it answered, in arrival order. */
  readonly exchanges: Exchange[];
  /** Opens a session through the trainer API; returns its id and token. */
  openSession(metadata?: Record<string, unknown>): Promise<{ id: string; token: string }>;
  /** The session's samples through the trainer API. */
  samples(id: string): Promise<SampleJson[]>;
  /** The session's view through the trainer API. */
  // deno-lint-ignore no-explicit-any
  session(id: string): Promise<any>;
  close(): Promise<void>;
}

/** What a test changes in an SDK client of the gateway. */
export interface ClientOptions {
  readonly baseURL?: string;
  readonly maxRetries?: number;
}

/** One request to the gateway and its response (the body read in full, streams included). */
export interface Exchange {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly status: number;
  /** The response body, once the response has been read to its end. */
  readonly response: Promise<string>;
}

/** A sample as the trainer API returns it. */
export interface SampleJson {
  kind: string;
  chain_id: string;
  prompt_ids: number[];
  response_ids: number[];
  loss_mask: number[];
  logprobs: number[];
  version_spans?: { version: string; start: number; end: number }[];
  stale_tokens?: number;
  turns: {
    input_len: number;
    output_len: number;
    finish_reason: string;
    flags: string[];
    weight_versions: string[];
  }[];
}

/**
 * The engines the engine-path tests run on (the scripted engine speaks each): SGLang, vLLM's
 * token-in/token-out endpoint, and vLLM's `/v1/completions` (older servers).
 */
export const ENGINE_APIS = ["sglang", "vllm", "vllm_completions"] as const;

/** The configuration that points the gateway at engine `api` of {@linkcode ENGINE_APIS}. */
export function engineEnv(api: string): Record<string, string> {
  return api === "vllm_completions"
    ? { ENGINE_API: "vllm", VLLM_ENDPOINT: "completions" }
    : { ENGINE_API: api };
}

/** A test's name on `api`: as it was on SGLang, marked on any other. */
export function onEngine(name: string, api: string): string {
  return api === "sglang" ? name : `${name} (engine: ${api})`;
}

/**
 * Two turns of one conversation ("Remember this.", then "And this." after the reply): the second
 * prompt extends everything the first read and sampled.
 */
export async function twoTurns(client: Anthropic): Promise<void> {
  const first = [{ role: "user" as const, content: "Remember this." }];
  const reply = await client.messages.create({ model: "m", max_tokens: 16, messages: first });
  await client.messages.create({
    model: "m",
    max_tokens: 16,
    messages: [
      ...first,
      { role: "assistant", content: reply.content },
      { role: "user", content: "And this." },
    ],
  });
}

/** Starts a gateway; `env` overrides configuration variables. */
export async function startGateway(
  options: {
    script?: Script | Reply[];
    env?: Record<string, string>;
    latencyMs?: number;
    /** Share this KV (another gateway's), as processes share one KV file; left open on close. */
    kv?: Store;
    /** A sandbox backend of the test's own; closed by the test. */
    sandbox?: SandboxBackend;
    /**
     * Run this gateway's rollout worker (off by default: most tests submit no rollouts); its
     * agents call the gateway's own URL, so the socket opens at start.
     */
    worker?: boolean;
    /** The served model's tokenizer and template (Qwen3's by default). */
    tokenizer?: ChatTokenizer;
    /** The engine streams deltas (`--incremental-streaming-output`), not cumulative chunks. */
    incrementalStreaming?: boolean;
    /** How the engine samples scripted text (as the tokenizer encodes it, by default). */
    spelling?: Spelling;
    /** The fault an engine call plays when none is queued. */
    faultFor?: (call: EngineCall) => Fault | undefined;
    /**
     * Engine workers to start: the gateway places generations on them itself
     * (`ENGINE_PLACEMENT=gateway`, `ENGINE_WORKERS` their URLs).
     */
    workers?: number;
    /** The engine serves a vision-language model (its `image_data` checked against the pads). */
    vision?: ScriptedEngineOptions["vision"];
    /**
     * The engine serves a mixture-of-experts model of this shape, and the gateway records its
     * routed experts (`ROUTED_EXPERTS`, the shape's `config.json` in `TOKENIZER_PATH`).
     */
    moe?: MoeShape;
    /** How a vLLM engine returns them (`ScriptedEngineOptions.vllmRoutes`). */
    vllmRoutes?: "npy" | "split";
    /** The memo of agents' recurring fields, in place of the default one. */
    recurringFields?: RecurringFields;
    /** The clock its leases go by (another host's, running ahead or behind). */
    clock?: () => number;
    /**
     * Give this gateway tokenizer workers and an engine HTTP worker of its own, stopped by
     * `close()`, not the ones this process's gateways share: those live as long as the process,
     * and a Web Worker keeps a process alive. A script run by `deno run` (a bench) sets it, so
     * that it ends once its gateways are closed; `deno test` ends its process itself.
     */
    ownWorkers?: boolean;
  } = {},
): Promise<TestGateway> {
  const tok = options.tokenizer ?? await qwen3();
  const engineOptions = {
    tokenizer: tok,
    script: options.script,
    latencyMs: options.latencyMs,
    incrementalStreaming: options.incrementalStreaming,
    spelling: options.spelling,
    faultFor: options.faultFor,
    // The engine speaks the dialect the gateway is configured for.
    dialect: options.env?.ENGINE_API ?? "sglang",
    ...(options.vision ? { vision: options.vision } : {}),
    ...(options.moe ? { moe: options.moe } : {}),
    ...(options.vllmRoutes ? { vllmRoutes: options.vllmRoutes } : {}),
  };
  const fleet = options.workers ? await startScriptedFleet(options.workers, engineOptions) : null;
  const engine = fleet?.workers[0] ?? await startScriptedEngine(engineOptions);
  const kv = options.kv ?? await Deno.openKv(":memory:");
  // Sandboxes, fixture repositories and bundles of this gateway only, removed on close.
  const sandboxRoot = await Deno.makeTempDir({ prefix: "rg-gw-" });
  const config = resolveConfig({
    KV_PATH: ":memory:",
    ADMIN_TOKEN,
    // The `host` label of its metrics: the same on every machine the tests run on.
    HOST_ID: "test-host",
    SGLANG_URL: engine.url,
    PING_INTERVAL_MS: "50",
    SANDBOX_ROOT: sandboxRoot,
    ...(fleet
      ? {
        ENGINE_PLACEMENT: "gateway",
        ENGINE_WORKERS: fleet.urls.join(","),
        ENGINE_HEALTH_INTERVAL_MS: "100",
      }
      : {}),
    ...(options.moe
      ? { ROUTED_EXPERTS: "true", TOKENIZER_PATH: await moeModelFolder(options.moe) }
      : {}),
    ...options.env,
  });
  const deps = await buildDeps(config, {
    kv,
    tokenizer: tok,
    sandbox: options.sandbox,
    ...(options.ownWorkers ? {} : { encoderPool: sharedPool, engineHttpWorker: sharedHttpWorker }),
    recurringFields: options.recurringFields,
    clock: options.clock,
  });
  const app = createGatewayApp(deps);
  const exchanges: Exchange[] = [];
  const handle = (request: Request) => answer(app, request, exchanges);
  const send = async (input: string | URL | Request, init?: RequestInit) =>
    await handle(await wireRequest(input, init));
  let server: Deno.HttpServer<Deno.NetAddr> | null = null;
  let url: string | null = null;
  const listen = () => {
    if (url === null) {
      server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
      url = `http://127.0.0.1:${server.addr.port}`;
      deps.setListening(url);
    }
    return url;
  };
  if (options.worker) {
    // The worker's agents call the gateway's own URL.
    listen();
    deps.rollout.start();
  }
  const admin = ADMIN_HEADERS;
  return {
    get url() {
      return listen();
    },
    fetch: send,
    anthropic: (apiKey, options = {}) =>
      new Anthropic({
        apiKey,
        baseURL: options.baseURL ?? GATEWAY_ORIGIN,
        fetch: send,
        maxRetries: options.maxRetries ?? 0,
      }),
    openai: (apiKey, options = {}) =>
      new OpenAI({
        apiKey,
        baseURL: options.baseURL ?? `${GATEWAY_ORIGIN}/v1`,
        fetch: send,
        maxRetries: options.maxRetries ?? 0,
      }),
    app,
    deps,
    engine,
    fleet,
    kv,
    exchanges,
    tokenizer: tok,
    openSession: async (metadata) => {
      const response = await send("/sessions", {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ metadata }),
      });
      if (response.status !== 201) {
        throw new Error(`open session: ${response.status} ${await response.text()}`);
      }
      return await response.json();
    },
    samples: async (id) => {
      const response = await send(`/sessions/${id}/samples`, { headers: admin });
      if (response.status !== 200) {
        throw new Error(`samples: ${response.status} ${await response.text()}`);
      }
      return (await response.json()).samples;
    },
    session: async (id) => {
      const response = await send(`/sessions/${id}`, { headers: admin });
      if (response.status !== 200) {
        throw new Error(`session: ${response.status} ${await response.text()}`);
      }
      return await response.json();
    },
    close: async () => {
      await server?.shutdown();
      await deps.close();
      await (fleet ?? engine).close();
      if (!options.kv) kv.close();
      await Deno.remove(sandboxRoot, { recursive: true });
    },
  };
}

/**
 * The request `fetch(input, init)` would put on the wire: a path against
 * {@linkcode GATEWAY_ORIGIN}; a body of known length with its `content-length`, a stream without
 * (chunked); `content-length: 0` on a POST or PUT without a body, as the Fetch standard says.
 */
async function wireRequest(input: string | URL | Request, init?: RequestInit): Promise<Request> {
  const request = new Request(
    input instanceof Request ? input : new URL(input, GATEWAY_ORIGIN),
    init,
  );
  if (request.headers.has("content-length") || init?.body instanceof ReadableStream) {
    return request;
  }
  if (request.body === null) {
    if (request.method === "POST" || request.method === "PUT") {
      request.headers.set("content-length", "0");
    }
    return request;
  }
  const body = await request.arrayBuffer();
  const headers = new Headers(request.headers);
  headers.set("content-length", String(body.byteLength));
  return new Request(request, { headers, body });
}

/**
 * The app's answer to `request`, recorded in `exchanges`; the response body is copied as it
 * passes, and a client that cancels it still cancels the gateway's stream.
 */
async function answer(app: Hono, request: Request, exchanges: Exchange[]): Promise<Response> {
  const requestBody = await request.clone().text();
  const response = await app.fetch(request);
  const chunks: Uint8Array[] = [];
  let ended: () => void = () => {};
  const done = new Promise<void>((resolve) => ended = resolve);
  const body = response.body?.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        chunks.push(chunk);
        controller.enqueue(chunk);
      },
      flush: () => ended(),
      cancel: () => ended(),
    }),
  ) ?? null;
  if (!body) ended();
  const url = new URL(request.url);
  exchanges.push({
    method: request.method,
    path: url.pathname + url.search,
    headers: Object.fromEntries(request.headers),
    body: requestBody,
    status: response.status,
    response: done.then(() => Buffer.concat(chunks).toString("utf8")),
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

/** Every key and versionstamp in KV, to prove a request wrote nothing. */
export async function kvSnapshot(kv: Store): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    out.push(`${JSON.stringify(entry.key)}@${entry.versionstamp}`);
  }
  return out;
}

/**
 * A model folder whose `config.json` describes `shape` as Qwen3-MoE's does (the tokenizer itself
 * is given to the gateway): what `ROUTED_EXPERTS` reads at start-up.
 */
export async function moeModelFolder(shape: MoeShape): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "rg-moe-" });
  // The served tokenizer's files beside it, for a tokenizer worker that loads them from here.
  const tokenizer = defaultTokenizerPath().replace(/\/+$/, "");
  for await (const entry of Deno.readDir(tokenizer)) {
    if (entry.isFile) await Deno.symlink(`${tokenizer}/${entry.name}`, `${dir}/${entry.name}`);
  }
  await Deno.writeTextFile(
    `${dir}/config.json`,
    JSON.stringify({
      architectures: ["Qwen3MoeForCausalLM"],
      num_hidden_layers: shape.layers,
      num_experts: shape.experts,
      num_experts_per_tok: shape.topK,
      decoder_sparse_step: 1,
      mlp_only_layers: shape.denseLayers,
    }),
  );
  return dir;
}
