/**
 * `/metrics` under `WORKERS=2`: a scrape lands on either worker and shows both, the serving
 * worker's registry live and the other's snapshot from KV, each series labelled with its worker;
 * each worker's turns are the turns it served.
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { qwen3 } from "../_gateway.ts";
import { waitFor } from "../_host.ts";
import { countable, parseExposition } from "../_prometheus.ts";
import {
  ADMIN_TOKEN,
  bashCall,
  followUp,
  openSession,
  type ReplyJson,
  spawnGateway,
  TOOLS,
} from "./_gateway_process.ts";

/** A request on a connection of its own, so the kernel may hand it to either worker. */
async function onNewConnection(send: (client: Deno.HttpClient) => Promise<Response>) {
  const client = Deno.createHttpClient({});
  try {
    const response = await send(client);
    const body = await response.text();
    assert.equal(response.status, 200, body);
    return { body, worker: response.headers.get("x-gateway-worker")! };
  } finally {
    client.close();
  }
}

/** Turns of each worker, summed over routes, as one scrape shows them. */
function turnsByWorker(values: Map<string, number>): Record<string, number> {
  const turns: Record<string, number> = {};
  for (const [id, value] of values) {
    const match = id.match(
      /^rollout_gateway_turns_total\{host="[\w.-]+",route="\w+",worker="(\d+)"\}$/,
    );
    if (match) turns[match[1]] = (turns[match[1]] ?? 0) + value;
  }
  return turns;
}

Deno.test("with two workers, a scrape on either shows both, each worker's turns the turns it served", async () => {
  const engine = await startScriptedEngine({
    tokenizer: await qwen3(),
    script: (call) => bashCall(`step ${call.inputIds.length}`),
  });
  const dir = await Deno.makeTempDir({ prefix: "metrics_workers_" });
  const gateway = await spawnGateway({
    KV_PATH: `${dir}/gateway.kv`,
    SGLANG_URL: engine.url,
    WORKERS: "2",
  });
  try {
    const { token } = await openSession(gateway.url);
    const served: Record<string, number> = { "0": 0, "1": 0 };
    let messages: unknown[] = [{ role: "user", content: "Run the steps." }];
    // Connections land on either worker; 40 turns leave no real chance that one served none.
    for (let turn = 0; turn < 40 && (served["0"] < 3 || served["1"] < 3); turn++) {
      const { body, worker } = await onNewConnection((client) =>
        fetch(`${gateway.url}/v1/messages`, {
          client,
          method: "POST",
          headers: { "x-api-key": token, "content-type": "application/json" },
          body: JSON.stringify({ model: "m", max_tokens: 256, tools: TOOLS, messages }),
        })
      );
      served[worker]++;
      messages = followUp(messages, JSON.parse(body) as ReplyJson, turn);
    }
    assert.ok(served["0"] > 0 && served["1"] > 0, `served ${JSON.stringify(served)}`);
    // A worker publishes every few seconds: scrape until both show what they served.
    const scrapedBy = new Set<string>();
    let last: Record<string, number> = {};
    await waitFor(
      async () => {
        const { body, worker } = await onNewConnection((client) =>
          fetch(`${gateway.url}/metrics`, {
            client,
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          })
        );
        last = turnsByWorker(countable(await parseExposition(body)));
        if (isDeepStrictEqual(last, served)) scrapedBy.add(worker);
        return scrapedBy.size === 2;
      },
      () => `scrapes showing ${JSON.stringify(served)}, last ${JSON.stringify(last)}`,
      30_000,
    );
  } finally {
    await gateway.close();
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
});
