/**
 * Gateway hosts on one PostgreSQL store for process-level tests: each a `functions/serve.ts`
 * process with its own working and sandbox folders and `HOST_ID`, one throwaway cluster, one
 * scripted engine in the test's process; and the Claude-Code-sized turn they are driven with.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type EngineCall, type Reply, startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { openPostgresStore, type PostgresStore } from "../../lib/kv/mod.ts";
import { body, type opening } from "../../bench/_claude_code_load.ts";
import { qwen3 } from "../_gateway.ts";
import { type PostgresCluster, startPostgres } from "../_postgres.ts";
import { type GatewayProcess, spawnGateway } from "./_gateway_process.ts";

/** Model text that calls Claude Code's Bash tool with `command`. */
export const bashCall = (command: string) =>
  `<tool_call>\n{"name": "Bash", "arguments": {"command": "${command}"}}\n</tool_call>`;

/** Two hosts on one fresh database, and what they share: the engine and the store. */
export interface Fleet {
  readonly hosts: GatewayProcess[];
  readonly calls: EngineCall[];
  readonly store: PostgresStore;
  /** The database's URL. */
  readonly url: string;
  /** Starts host `name` (again, after a kill) in a new folder of its own, `env` added to the fleet's. */
  spawn(name: string, env?: Record<string, string>): Promise<GatewayProcess>;
  /** Each host's working folder, by name (its latest). */
  readonly folders: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

/**
 * Hosts `names` (`gw-a` and `gw-b` unless said) on a fresh database of `shared` (a new cluster
 * when none is given, stopped with the fleet), the engine answering with `script`.
 */
export async function fleet(
  script: (call: EngineCall) => Reply,
  env: Record<string, string> = {},
  shared?: PostgresCluster,
  names: readonly string[] = ["gw-a", "gw-b"],
): Promise<Fleet> {
  const cluster = shared ?? await startPostgres();
  const url = await cluster.database();
  const engine = await startScriptedEngine({ tokenizer: await qwen3(), script });
  const folders = new Map<string, string>();
  const made: string[] = [];
  const processes: GatewayProcess[] = [];
  const spawn = async (name: string, extra: Record<string, string> = {}) => {
    // A host of its own: its working folder, its sandboxes, nothing shared but the store.
    const folder = await Deno.makeTempDir({ prefix: `rg-${name}-` });
    folders.set(name, folder);
    made.push(folder);
    const gateway = await spawnGateway({
      STORE_URL: url,
      STORE_POOL_SIZE: "4",
      HOST_ID: name,
      ENGINE_URL: engine.url,
      SANDBOX_ROOT: `${folder}/sandboxes`,
      LEASE_TTL_MS: "3000",
      ...env,
      ...extra,
    }, folder);
    processes.push(gateway);
    return gateway;
  };
  const hosts: GatewayProcess[] = [];
  for (const name of names) hosts.push(await spawn(name));
  const store = await openPostgresStore(url, {
    maxConnections: 2,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 5_000,
    sweepIntervalMs: 0,
  });
  return {
    hosts,
    calls: engine.calls,
    store,
    url,
    spawn,
    folders,
    async close() {
      for (const gateway of processes) await gateway.close();
      await store.end();
      await engine.close();
      for (const folder of made) {
        // A test may have removed a dead host's folder itself.
        await Deno.remove(folder, { recursive: true }).catch((error) => {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        });
      }
      if (!shared) await cluster.close();
    },
  };
}

/** A Claude-Code-sized turn (12 tools, a 7 KB system prompt, the history so far) on `url`. */
export async function turn(url: string, token: string, messages: ReturnType<typeof opening>) {
  const response = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body(messages),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return await response.json();
}
