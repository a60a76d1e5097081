/**
 * Hosts' clocks do not decide who writes a chain. A host whose clock runs an hour ahead sees
 * another host's live lease as run out and takes it while that host still generates: the turn is
 * then recorded once, by the host that holds the lease at its commit — the other host's commit
 * checks the lease's versionstamp (a fencing token), fails, and writes nothing (409
 * `chain_conflict`, which the agent retries). Both gateways share one store, as hosts do. On a
 * MoE model the losing turn's routed experts, written ahead of its commit, are deleted with it.
 */
import assert from "node:assert/strict";
import type Anthropic from "@anthropic-ai/sdk";
import { pollUntil } from "../../lib/timing/mod.ts";
import { keys, type Lease } from "../../lib/kv/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { startGateway } from "../_gateway.ts";
import { TEST_MOE } from "../_moe_episode.ts";

const HOUR = 3_600_000;

for (const moe of [undefined, TEST_MOE]) {
  Deno.test(`a host whose clock runs an hour ahead takes a live lease, and the chain is still written once${moe ? " (routed experts)" : ""}`, async () => {
    let calls = 0;
    // The second call (the first host's attempt at turn 2) generates slowly.
    const script = () => (++calls === 2 ? { text: "Slow answer.", latencyMs: 200 } : "Answer.");
    const onTime = await startGateway({ script, env: { LEASE_TTL_MS: "3000" }, moe });
    const ahead = await startGateway({
      script,
      kv: onTime.kv,
      env: { LEASE_TTL_MS: "3000" },
      clock: () => Date.now() + HOUR,
      moe,
    });
    try {
      const { id, token } = await onTime.openSession();
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: "One." }];
      const first = await onTime.anthropic(token).messages.create({
        model: "m",
        max_tokens: 32,
        messages,
      });
      messages.push({ role: "assistant", content: first.content }, {
        role: "user",
        content: "Two.",
      });
      const request = () => JSON.stringify({ model: "m", max_tokens: 32, messages });
      const slow = onTime.fetch("/v1/messages", {
        method: "POST",
        headers: { "x-api-key": token },
        body: request(),
      });
      // The first host holds the chain's lease while it generates.
      const held = await pollUntil(
        async () => (await onTime.kv.get<Lease>(keys.chainLease(id, "c0"))).value !== null,
        { timeoutMs: 5_000, intervalMs: 5 },
      );
      assert.ok(held, "the first host took the chain's lease");
      // The agent's retry reaches the host whose clock is ahead: the lease looks run out to it.
      const retried = await ahead.fetch("/v1/messages", {
        method: "POST",
        headers: { "x-api-key": token },
        body: request(),
      });
      assert.equal(retried.status, 200, await retried.clone().text());
      const lost = await slow;
      assert.equal(lost.status, 409, await lost.clone().text());
      assert.equal((await lost.json()).error.type, "conflict_error");
      // One chain of two turns: the first host's first turn, then the second host's.
      const recorded = await onTime.samples(id);
      assertChainExact([onTime.engine.calls[0], ahead.engine.calls[0]], recorded);
      assert.equal(onTime.engine.calls.length, 2, "the first host's slow attempt was made");
      assert.deepEqual(await ahead.samples(id), recorded);
      if (moe) {
        // The routes kept are the two recorded turns' blobs; the lost attempt's went with it.
        const rids = new Set<unknown>();
        for await (const entry of onTime.kv.list({ prefix: keys.sessionRoutes(id) })) {
          rids.add(entry.key[4]);
        }
        assert.deepEqual(
          [...rids].sort(),
          [onTime.engine.calls[0].rid, ahead.engine.calls[0].rid].sort(),
        );
        assert.ok(!rids.has(onTime.engine.calls[1].rid));
      }
    } finally {
      await ahead.close();
      await onTime.close();
    }
  });
}
