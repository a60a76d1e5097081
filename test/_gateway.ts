/**
 * Test harness: a gateway over the real tokenizer, an in-memory KV and the scripted engine,
 * served on a real loopback socket.
 *
 * @module
 */
import { resolveConfig } from "../lib/config/mod.ts";
import { type ChatTokenizer, loadTokenizer } from "../lib/template/mod.ts";
import { defaultTokenizerPath } from "../lib/config/mod.ts";
import {
  type Reply,
  type Script,
  type ScriptedEngine,
  startScriptedEngine,
} from "../fixtures/scripted_engine.ts";
import { buildDeps, type Deps } from "../functions/_deps.ts";
import { createGatewayApp } from "../functions/serve.ts";
import type { Hono } from "hono";

let tokenizer: Promise<ChatTokenizer> | null = null;

/** The Qwen3 tokenizer, loaded once per test process. */
export function qwen3(): Promise<ChatTokenizer> {
  tokenizer ??= loadTokenizer(defaultTokenizerPath());
  return tokenizer;
}

export const ADMIN_TOKEN = "test-admin-token-0123456789";

/** A running gateway for one test. */
export interface TestGateway {
  readonly url: string;
  readonly app: Hono;
  readonly deps: Deps;
  readonly engine: ScriptedEngine;
  readonly kv: Deno.Kv;
  readonly tokenizer: ChatTokenizer;
  /** Opens a session through the trainer API; returns its id and token. */
  openSession(metadata?: Record<string, unknown>): Promise<{ id: string; token: string }>;
  /** The session's samples through the trainer API. */
  samples(id: string): Promise<SampleJson[]>;
  close(): Promise<void>;
}

/** A sample as the trainer API returns it. */
export interface SampleJson {
  kind: string;
  chain_id: string;
  prompt_ids: number[];
  response_ids: number[];
  loss_mask: number[];
  logprobs: number[];
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
  options: { script?: Script | Reply[]; env?: Record<string, string>; latencyMs?: number } = {},
): Promise<TestGateway> {
  const tok = await qwen3();
  const engine = await startScriptedEngine({
    tokenizer: tok,
    script: options.script,
    latencyMs: options.latencyMs,
  });
  const kv = await Deno.openKv(":memory:");
  const config = resolveConfig({
    KV_PATH: ":memory:",
    ADMIN_TOKEN,
    SGLANG_URL: engine.url,
    PING_INTERVAL_MS: "50",
    ...options.env,
  });
  const deps = await buildDeps(config, { kv, tokenizer: tok });
  const app = createGatewayApp(deps);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  const url = `http://127.0.0.1:${server.addr.port}`;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
  return {
    url,
    app,
    deps,
    engine,
    kv,
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
    close: async () => {
      await server.shutdown();
      await deps.close();
      await engine.close();
      kv.close();
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
