/**
 * The gateway's own placement (`ENGINE_PLACEMENT=gateway`) over scripted engine workers, through
 * HTTP: a chain's turns land on one worker, a sub-agent beside its parent, sessions spread over
 * the workers; a worker that dies (between turns or under a streaming turn) costs its chains one
 * re-prefill on another worker and never a lost or forked turn; a draining worker takes no new
 * turns; `/metrics` counts prompt, cached and prefill tokens per worker.
 */
import assert from "node:assert/strict";
import type Anthropic from "@anthropic-ai/sdk";
import { resolveConfig } from "../../lib/config/mod.ts";
import type { PlacedEngine } from "../../lib/engine/mod.ts";
import { ADMIN_HEADERS, ADMIN_TOKEN, startGateway, type TestGateway } from "../_gateway.ts";
import { countable, parseExposition } from "../_prometheus.ts";
import type { Script } from "../../lib/scripted_engine/mod.ts";

type Message = Anthropic.MessageParam;

/** Sends `messages` and returns them with the reply appended. */
async function turn(
  client: Anthropic,
  messages: Message[],
  headers: Record<string, string> = {},
): Promise<Message[]> {
  const reply = await client.messages.create(
    { model: "m", max_tokens: 64, messages },
    { headers },
  );
  return [...messages, { role: "assistant", content: reply.content }];
}

/** Which worker (index) each engine call of a worker list went to, keyed by routing session. */
function callsByWorker(
  gw: TestGateway,
): { worker: number; inputIds: number[]; output?: number[] }[] {
  return gw.fleet!.workers.flatMap((worker, index) =>
    worker.calls.map((call) => ({ worker: index, inputIds: call.inputIds, output: call.output }))
  );
}

/** The raw export of a session: its chains and their turns. */
// deno-lint-ignore no-explicit-any
async function raw(gw: TestGateway, id: string): Promise<any> {
  const response = await gw.fetch(`/sessions/${id}/samples?format=raw`, { headers: ADMIN_HEADERS });
  assert.equal(response.status, 200);
  return await response.json();
}

Deno.test("ENGINE_PLACEMENT=gateway needs ENGINE_WORKERS", () => {
  assert.throws(
    () => resolveConfig({ ENGINE_PLACEMENT: "gateway" }),
    /Invalid ENGINE_WORKERS: required when ENGINE_PLACEMENT is gateway/,
  );
});

/** Each chain's workers (indexes), by the turns the raw export records. */
async function chainWorkers(gw: TestGateway, id: string): Promise<number[][]> {
  const { chains } = await raw(gw, id);
  return chains.map((chain: { turns: { worker: string }[] }) =>
    chain.turns.map((t) => gw.fleet!.urls.indexOf(t.worker))
  );
}

Deno.test("a chain's turns land on one worker, and sessions spread over the workers", async () => {
  const gw = await startGateway({ workers: 3, script: () => "Done." });
  try {
    const homes: number[] = [];
    for (let i = 0; i < 12; i++) {
      const { id, token } = await gw.openSession();
      const client = gw.anthropic(token);
      let messages: Message[] = [{ role: "user", content: `Task ${i}.` }];
      for (const next of ["Go on.", "Finish."]) {
        messages = await turn(client, messages);
        messages.push({ role: "user", content: next });
      }
      const [workers] = await chainWorkers(gw, id);
      assert.equal(workers.length, 2);
      assert.equal(new Set(workers).size, 1, `session ${i} on workers ${workers}`);
      homes.push(workers[0]);
    }
    // Twelve sessions hashed over three workers (all on one: a chance of 6 in a million).
    assert.ok(new Set(homes).size >= 2, `chains on workers ${homes}`);
    // Every engine call went where the turns say.
    assert.deepEqual(
      callsByWorker(gw).map((call) => call.worker).sort(),
      homes.flatMap((home) => [home, home]).sort(),
    );
  } finally {
    await gw.close();
  }
});

Deno.test("sub-agents are placed beside their parent, and a side chain beside its session's", async () => {
  const gw = await startGateway({ workers: 3, script: () => "Done." });
  try {
    const { id, token } = await gw.openSession();
    const client = gw.anthropic(token);
    await turn(client, [{ role: "user", content: "Plan the work." }]);
    // Two sub-agents: chains of their own (by the header Claude Code sends), parent the main one.
    for (const agent of ["agent-1", "agent-2"]) {
      await turn(client, [{ role: "user", content: `Search for ${agent}.` }], {
        "x-claude-code-agent-id": agent,
      });
    }
    // A helper of no agent with its own system prompt (a title): a side chain, by the session's key.
    await client.messages.create({
      model: "m",
      max_tokens: 16,
      system: "Title this conversation.",
      messages: [{ role: "user", content: "Plan the work." }],
    });
    const { chains } = await raw(gw, id);
    assert.deepEqual(chains.map((chain: { role: string }) => chain.role), [
      "main",
      "subagent",
      "subagent",
      "side",
    ]);
    const workers = await chainWorkers(gw, id);
    assert.deepEqual(workers, [[workers[0][0]], [workers[0][0]], [workers[0][0]], [
      workers[0][0],
    ]]);
  } finally {
    await gw.close();
  }
});

Deno.test("a killed worker's chains go on exactly on another: one re-prefill, the same recorded tokens", async () => {
  const gw = await startGateway({ workers: 2, script: () => "Noted." });
  try {
    const { id, token } = await gw.openSession();
    const client = gw.anthropic(token);
    let messages: Message[] = [{ role: "user", content: "Remember this." }];
    messages = await turn(client, messages);
    messages = await turn(client, [...messages, { role: "user", content: "And this." }]);
    const first = await raw(gw, id);
    const home = first.chains[0].turns[0].worker as string;
    assert.equal(first.chains[0].turns[1].worker, home);
    const other = gw.fleet!.urls.find((url) => url !== home)!;
    await gw.fleet!.worker(home)!.kill();
    messages = await turn(client, [...messages, { role: "user", content: "One more." }]);
    const after = await raw(gw, id);
    const [chain] = after.chains;
    assert.equal(chain.turns.length, 3);
    assert.equal(chain.turns[2].worker, other);
    assert.ok(chain.turns[2].flags.includes("engine_failover"));
    // The other worker read the whole chain (nothing of it cached there) and sampled the turn.
    const [call] = gw.fleet!.worker(other)!.calls;
    assert.equal(gw.fleet!.worker(other)!.calls.length, 1);
    const [sample] = await gw.samples(id);
    assert.deepEqual(
      [...call.inputIds, ...call.output!],
      [...sample.prompt_ids, ...sample.response_ids].slice(
        0,
        call.inputIds.length + call.output!.length,
      ),
    );
    assert.equal(chain.turns[2].cached_tokens, 0);
    // The chain stays there: the next turn too, with its prefix cached.
    gw.fleet!.worker(home)!.revive();
    await (gw.deps.engine as PlacedEngine).checkHealth();
    await turn(client, [...messages, { role: "user", content: "Last." }]);
    const last = (await raw(gw, id)).chains[0].turns[3];
    assert.equal(last.worker, other);
    assert.ok(last.cached_tokens > call.inputIds.length);
  } finally {
    await gw.close();
  }
});

/**
 * A script that, like a model, continues the reply from wherever the prompt leaves it: a prompt
 * that ends with the reply's first tokens gets the rest.
 */
function continuing(full: () => number[]): Script {
  return (call) => {
    const tokens = full();
    const ids = call.inputIds;
    for (let k = Math.min(tokens.length, ids.length); k > 0; k--) {
      if (tokens.slice(0, k).every((token, i) => ids[ids.length - k + i] === token)) {
        return { tokens: tokens.slice(k) };
      }
    }
    return { tokens };
  };
}

Deno.test("a worker dying under a streaming turn: the turn goes on on another after the tokens shown", async () => {
  const text = "One two three four five six seven eight nine ten eleven twelve.";
  let full: number[] = [];
  const gw = await startGateway({ workers: 2, script: continuing(() => full), latencyMs: 40 });
  // 40 ms a token: the worker is killed mid-stream however busy the machine.
  full = gw.tokenizer.encode(text);
  try {
    const { id, token } = await gw.openSession();
    const stream = gw.anthropic(token).messages.stream({
      model: "m",
      max_tokens: 64,
      messages: [{ role: "user", content: "Count." }],
    });
    let killed = false;
    let shown = "";
    stream.on("text", (delta) => {
      shown += delta;
      if (!killed && shown.length > 10) {
        killed = true;
        const home = gw.fleet!.workers.find((worker) => worker.inFlight() > 0)!;
        void home.kill();
      }
    });
    const message = await stream.finalMessage();
    assert.ok(killed);
    const reply = message.content.map((block) => block.type === "text" ? block.text : "").join("");
    assert.equal(reply, text);
    assert.equal(shown, text);
    const [chain] = (await raw(gw, id)).chains;
    assert.deepEqual(chain.turns[0].flags, ["engine_failover"]);
    // The second worker continued from prompt + the tokens sampled before the death.
    const dead = gw.fleet!.workers.find((worker) => !worker.alive())!;
    const alive = gw.fleet!.workers.find((worker) => worker.alive())!;
    const [first] = dead.calls;
    const [second] = alive.calls;
    const partial = second.inputIds.slice(first.inputIds.length);
    assert.deepEqual(second.inputIds.slice(0, first.inputIds.length), first.inputIds);
    assert.ok(partial.length > 0);
    const [sample] = await gw.samples(id);
    const output = [...sample.prompt_ids, ...sample.response_ids].slice(first.inputIds.length);
    // The recorded output: the tokens shown before the death, then the continuation (whole arrays).
    assert.deepEqual(output.slice(0, partial.length + second.output!.length), [
      ...partial,
      ...second.output!,
    ]);
    assert.equal(gw.tokenizer.decode([...partial, ...second.output!]), `${text}<|im_end|>`);
  } finally {
    await gw.close();
  }
});

Deno.test("a draining worker takes no new turns; its chains move at their next turn", async () => {
  const gw = await startGateway({ workers: 2, script: () => "Fine." });
  try {
    const { id, token } = await gw.openSession();
    const client = gw.anthropic(token);
    const messages = await turn(client, [{ role: "user", content: "Hello." }]);
    const home = (await raw(gw, id)).chains[0].turns[0].worker as string;
    gw.fleet!.worker(home)!.setHealth(503);
    await (gw.deps.engine as PlacedEngine).checkHealth();
    await turn(client, [...messages, { role: "user", content: "Again." }]);
    const turns = (await raw(gw, id)).chains[0].turns;
    assert.notEqual(turns[1].worker, home);
    // Drained, not failed: the turn was placed elsewhere before any call.
    assert.deepEqual(turns[1].flags, []);
    assert.equal(gw.fleet!.worker(home)!.calls.length, 1);
  } finally {
    await gw.close();
  }
});

Deno.test("/metrics counts prompt, cached and prefill tokens per engine worker", async () => {
  const gw = await startGateway({ workers: 2, script: () => "Noted." });
  try {
    const { id, token } = await gw.openSession();
    const client = gw.anthropic(token);
    const messages = await turn(client, [{ role: "user", content: "Remember this." }]);
    await turn(client, [...messages, { role: "user", content: "And this." }]);
    const worker = gw.fleet!.urls.indexOf((await raw(gw, id)).chains[0].turns[0].worker);
    const calls = gw.fleet!.workers[worker].calls;
    const response = await gw.fetch("/metrics", {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const values = countable(await parseExposition(await response.text()));
    const prompt = calls[0].inputIds.length + calls[1].inputIds.length;
    const cached = calls[0].inputIds.length + calls[0].output!.length;
    const label = `{engine_worker="${worker}",host="test-host",worker="0"}`;
    assert.equal(values.get(`rollout_gateway_engine_prompt_tokens_total${label}`), prompt);
    assert.equal(values.get(`rollout_gateway_engine_cached_tokens_total${label}`), cached);
    assert.equal(
      values.get(`rollout_gateway_engine_prefill_tokens_total${label}`),
      prompt - cached,
    );
    // Every configured worker has its series from the start: the idle one's are 0.
    const idle = `{engine_worker="${1 - worker}",host="test-host",worker="0"}`;
    assert.equal(values.get(`rollout_gateway_engine_prompt_tokens_total${idle}`), 0);
    assert.equal(values.get(`rollout_gateway_engine_worker_failures_total${idle}`), 0);
  } finally {
    await gw.close();
  }
});
