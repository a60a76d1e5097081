/**
 * Test harness: a gateway over the real tokenizer, an in-memory KV and the scripted engine,
 * served on a real loopback socket.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { resolveConfig } from "../lib/config/mod.ts";
import { type ChatTokenizer, loadTokenizer } from "../lib/template/mod.ts";
import { defaultTokenizerPath } from "../lib/config/mod.ts";
import {
  type EngineCall,
  type Fault,
  type Reply,
  type Script,
  type ScriptedEngine,
  startScriptedEngine,
} from "../lib/scripted_engine/mod.ts";
import { buildDeps, type Deps } from "../functions/_deps.ts";
import { createGatewayApp } from "../functions/serve.ts";
import type { Hono } from "hono";
import type { SandboxBackend } from "../lib/sandbox/mod.ts";

let tokenizer: Promise<ChatTokenizer> | null = null;

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

/** A running gateway for one test. */
export interface TestGateway {
  readonly url: string;
  readonly app: Hono;
  readonly deps: Deps;
  readonly engine: ScriptedEngine;
  readonly kv: Deno.Kv;
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

/** Starts a gateway; `env` overrides configuration variables. */
export async function startGateway(
  options: {
    script?: Script | Reply[];
    env?: Record<string, string>;
    latencyMs?: number;
    /** Share this KV (another gateway's), as processes share one KV file; left open on close. */
    kv?: Deno.Kv;
    /** A sandbox backend of the test's own; closed by the test. */
    sandbox?: SandboxBackend;
    /** Run this gateway's rollout worker (off by default: most tests submit no rollouts). */
    worker?: boolean;
    /** The served model's tokenizer and template (Qwen3's by default). */
    tokenizer?: ChatTokenizer;
    /** The engine streams deltas (`--incremental-streaming-output`), not cumulative chunks. */
    incrementalStreaming?: boolean;
    /** The fault an engine call plays when none is queued. */
    faultFor?: (call: EngineCall) => Fault | undefined;
  } = {},
): Promise<TestGateway> {
  const tok = options.tokenizer ?? await qwen3();
  const engine = await startScriptedEngine({
    tokenizer: tok,
    script: options.script,
    latencyMs: options.latencyMs,
    incrementalStreaming: options.incrementalStreaming,
    faultFor: options.faultFor,
  });
  const kv = options.kv ?? await Deno.openKv(":memory:");
  // Sandboxes, fixture repositories and bundles of this gateway only, removed on close.
  const sandboxRoot = await Deno.makeTempDir({ prefix: "rg-gw-" });
  const config = resolveConfig({
    KV_PATH: ":memory:",
    ADMIN_TOKEN,
    SGLANG_URL: engine.url,
    PING_INTERVAL_MS: "50",
    SANDBOX_ROOT: sandboxRoot,
    ...options.env,
  });
  const deps = await buildDeps(config, { kv, tokenizer: tok, sandbox: options.sandbox });
  const app = createGatewayApp(deps);
  const exchanges: Exchange[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const requestBody = await request.clone().text();
    const response = await app.fetch(request);
    // Copies the body as it passes; a client that cancels still cancels the gateway's stream.
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
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  deps.setListening(url);
  if (options.worker) deps.rollout.start();
  const admin = ADMIN_HEADERS;
  return {
    url,
    app,
    deps,
    engine,
    kv,
    exchanges,
    tokenizer: tok,
    openSession: async (metadata) => {
      const response = await fetch(`${url}/sessions`, {
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
      const response = await fetch(`${url}/sessions/${id}/samples`, { headers: admin });
      if (response.status !== 200) {
        throw new Error(`samples: ${response.status} ${await response.text()}`);
      }
      return (await response.json()).samples;
    },
    session: async (id) => {
      const response = await fetch(`${url}/sessions/${id}`, { headers: admin });
      if (response.status !== 200) {
        throw new Error(`session: ${response.status} ${await response.text()}`);
      }
      return await response.json();
    },
    close: async () => {
      await server.shutdown();
      await deps.close();
      await engine.close();
      if (!options.kv) kv.close();
      await Deno.remove(sandboxRoot, { recursive: true });
    },
  };
}

/** Every key and versionstamp in KV, to prove a request wrote nothing. */
export async function kvSnapshot(kv: Deno.Kv): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of kv.list({ prefix: [] })) {
    out.push(`${JSON.stringify(entry.key)}@${entry.versionstamp}`);
  }
  return out;
}
