/**
 * How a turn recognises the history it extends: by the identities this process remembers, or,
 * with a cold cache (another process, a restart), by the prefix digests stored in KV. Both must
 * agree, or a conversation would fork. And how a turn takes its chain's lease: the common turn in
 * one commit, never while its session's lease is held.
 */
import type { Store } from "../../lib/kv/mod.ts";
import assert from "node:assert/strict";
import { keys } from "../../lib/kv/mod.ts";
import { startGateway, type TestGateway } from "../_gateway.ts";

const TOOLS = [{ name: "Bash", input_schema: { type: "object" } }];
const call = (command: string) =>
  `<tool_call>\n{"name": "Bash", "arguments": {"command": "${command}"}}\n</tool_call>`;

/** Sends the conversation so far; appends the reply to it. */
async function turn(gw: TestGateway, token: string, messages: unknown[]) {
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token },
    body: JSON.stringify({ model: "m", max_tokens: 64, tools: TOOLS, messages }),
  });
  assert.equal(response.status, 200);
  const reply = await response.json();
  messages.push({ role: "assistant", content: reply.content });
  return reply;
}

function answer(messages: unknown[], reply: { content: { id?: string }[] }, text: string) {
  const id = reply.content.find((block) => block.id)!.id!;
  messages.push({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: id, content: text }],
  });
}

Deno.test("a conversation continued by another gateway on the same KV stays one chain", async () => {
  const first = await startGateway({ script: [call("ls"), call("cat a")] });
  const second = await startGateway({ script: [call("cat b"), "Done."], kv: first.kv });
  try {
    const { id, token } = await first.openSession();
    const messages: unknown[] = [{ role: "user", content: "Look around." }];
    answer(messages, await turn(first, token, messages), "a b");
    answer(messages, await turn(first, token, messages), "alpha");
    // The second gateway has never seen this chain: it reads it from KV and checks digests.
    answer(messages, await turn(second, token, messages), "beta");
    await turn(second, token, messages);
    const [firstCalls, secondCalls] = [first.engine.calls, second.engine.calls];
    const chain = [...firstCalls[1].inputIds, ...firstCalls[1].output!];
    assert.deepEqual(secondCalls[0].inputIds.slice(0, chain.length), chain);
    const samples = await first.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.turns.length]), [["c0", 4]]);
  } finally {
    await second.close();
    await first.close();
  }
});

Deno.test("a remembered history that changed in an earlier message starts a new chain", async () => {
  const gw = await startGateway({ script: [call("ls"), call("cat a"), "Other."] });
  try {
    const { id, token } = await gw.openSession();
    const messages: unknown[] = [{ role: "user", content: "Look around." }];
    answer(messages, await turn(gw, token, messages), "a b");
    answer(messages, await turn(gw, token, messages), "alpha");
    messages[0] = { role: "user", content: "Look around!" }; // same length, one character differs
    await turn(gw, token, messages);
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.kind]), [["c0", "wipe"], ["c1", "final"]]);
  } finally {
    await gw.close();
  }
});

Deno.test("moving cache_control markers does not change the recognised history", async () => {
  const gw = await startGateway({ script: [call("ls"), "Done."] });
  try {
    const { id, token } = await gw.openSession();
    const messages: unknown[] = [{
      role: "user",
      content: [{ type: "text", text: "Look around.", cache_control: { type: "ephemeral" } }],
    }];
    const reply = await turn(gw, token, messages);
    messages[0] = { role: "user", content: "Look around." };
    messages.push({
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: reply.content[0].id,
        content: "a b",
        cache_control: { type: "ephemeral" },
      }],
    });
    await turn(gw, token, messages);
    assert.deepEqual((await gw.samples(id)).map((s) => [s.chain_id, s.turns.length]), [["c0", 2]]);
  } finally {
    await gw.close();
  }
});

/**
 * The keys, by kind, that each commit on `kv` touching session `id` writes (`set:kind`,
 * `delete:kind`), failed commits included, from now on.
 */
function commitsOf(kv: Store, id: string): string[][] {
  const commits: string[][] = [];
  const atomic = kv.atomic.bind(kv);
  kv.atomic = () => {
    const op = atomic();
    const writes: string[] = [];
    const [set, del, commit] = [op.set.bind(op), op.delete.bind(op), op.commit.bind(op)];
    op.set = (
      key,
      value,
      options,
    ) => (writes.push(`set:${String(key[0])}:${String(key[1])}`), set(key, value, options));
    op.delete = (key) => (writes.push(`delete:${String(key[0])}:${String(key[1])}`), del(key));
    op.commit = () => {
      const mine = writes.filter((w) => w.endsWith(`:${id}`)).map((w) =>
        w.slice(0, -id.length - 1)
      );
      if (mine.length > 0) commits.push(mine);
      return commit();
    };
    return op;
  };
  return commits;
}

/** The kinds of the keys of `id` read from `kv` from now on, in order. */
function readsOf(kv: Store, id: string): string[] {
  const reads: string[] = [];
  const get = kv.get.bind(kv);
  kv.get = ((key: Deno.KvKey) => {
    if (key[1] === id) reads.push(String(key[0]));
    return get(key);
  }) as Store["get"];
  return reads;
}

Deno.test("a later turn takes its chain's lease in one commit, without its session's, and reads only its session", async () => {
  const gw = await startGateway({ script: [call("ls"), call("cat a"), "Done."] });
  try {
    const { id, token } = await gw.openSession();
    const messages: unknown[] = [{ role: "user", content: "Look around." }];
    answer(messages, await turn(gw, token, messages), "a b");
    const commits = commitsOf(gw.kv, id);
    const reads = readsOf(gw.kv, id);
    answer(messages, await turn(gw, token, messages), "alpha");
    assert.deepEqual(commits, [
      ["set:chain_lease"],
      ["delete:chain_lease", "set:turn_chunk", "set:turn", "set:replay", "set:chain"],
    ]);
    // The token check's read of the session; the chain's head is the one this process cached,
    // which the lease's commit checks.
    assert.deepEqual(reads, ["session"]);
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.turns.length]), [["c0", 2]]);
  } finally {
    await gw.close();
  }
});

Deno.test("a later turn waits while its session's lease is held, as a close holds it", async () => {
  const gw = await startGateway({ script: [call("ls"), "Done."], env: { LOCK_WAIT_MS: "40" } });
  try {
    const { id, token } = await gw.openSession();
    const messages: unknown[] = [{ role: "user", content: "Look around." }];
    answer(messages, await turn(gw, token, messages), "a b");
    const lease = { holder: "closer", acquiredAt: Date.now(), expiresAt: Date.now() + 60_000 };
    await gw.kv.set(keys.lease(id), lease);
    const body = JSON.stringify({ model: "m", max_tokens: 64, tools: TOOLS, messages });
    const refused = await gw.fetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": token },
      body,
    });
    assert.equal(refused.status, 529);
    assert.equal((await refused.json()).error.type, "overloaded_error");
    assert.equal(gw.engine.calls.length, 1);
    await gw.kv.delete(keys.lease(id));
    await turn(gw, token, messages);
    const samples = await gw.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.turns.length]), [["c0", 2]]);
  } finally {
    await gw.close();
  }
});

Deno.test("gateways taking turns on one session route on what KV holds, not a stale cache", async () => {
  const first = await startGateway({ script: [call("ls"), call("cat b")] });
  const second = await startGateway({ script: [call("cat a"), "Done."], kv: first.kv });
  try {
    const { id, token } = await first.openSession();
    const messages: unknown[] = [{ role: "user", content: "Look around." }];
    answer(messages, await turn(first, token, messages), "a b");
    answer(messages, await turn(second, token, messages), "alpha");
    // The first gateway cached the chain before the second extended it.
    const commits = commitsOf(first.kv, id);
    answer(messages, await turn(first, token, messages), "beta");
    // Routed on the cached header, unread: its lease commit fails on the moved header, which is
    // read, and the turn routed again on it takes the lease with the second commit.
    assert.deepEqual(commits, [
      ["set:chain_lease"],
      ["set:chain_lease"],
      ["delete:chain_lease", "set:turn_chunk", "set:turn", "set:replay", "set:chain"],
    ]);
    await turn(second, token, messages);
    const calls = [first.engine.calls[0], second.engine.calls[0], first.engine.calls[1]];
    calls.push(second.engine.calls[1]);
    for (let i = 1; i < calls.length; i++) {
      const before = [...calls[i - 1].inputIds, ...calls[i - 1].output!];
      assert.deepEqual(calls[i].inputIds.slice(0, before.length), before);
    }
    const samples = await first.samples(id);
    assert.deepEqual(samples.map((s) => [s.chain_id, s.turns.length]), [["c0", 4]]);
  } finally {
    await second.close();
    await first.close();
  }
});

/** Counts the store operations made through `kv` from now on (each a round trip). */
function roundTrips(kv: Store): { count: number } {
  const counter = { count: 0 };
  const counted = <F extends (...args: never[]) => unknown>(f: F) =>
    ((...args: Parameters<F>) => (counter.count++, f(...args))) as unknown as F;
  kv.get = counted(kv.get.bind(kv));
  kv.getMany = counted(kv.getMany.bind(kv));
  kv.list = counted(kv.list.bind(kv));
  const atomic = kv.atomic.bind(kv);
  kv.atomic = () => {
    const op = atomic();
    op.commit = counted(op.commit.bind(op));
    return op;
  };
  return counter;
}

Deno.test("a later turn on a process that has not cached its chain costs as many store round trips at 40 turns as at 4", async () => {
  const costs: number[] = [];
  for (const turns of [4, 40]) {
    const script = [...Array.from({ length: turns }, (_, i) => call(`step ${i}`)), "Done."];
    const first = await startGateway({ script });
    const second = await startGateway({ script: ["Done."], kv: first.kv });
    try {
      const { token } = await first.openSession();
      const messages: unknown[] = [{ role: "user", content: "Work." }];
      for (let i = 0; i < turns; i++) answer(messages, await turn(first, token, messages), `${i}`);
      const trips = roundTrips(first.kv);
      await turn(second, token, messages);
      costs.push(trips.count);
    } finally {
      await second.close();
      await first.close();
    }
  }
  assert.equal(costs[1], costs[0], `round trips at 4 and 40 turns: ${costs}`);
  assert.ok(costs[0] <= 10, `${costs[0]} round trips`);
});
