/**
 * A short soak (bench/soak.ts, the core of `deno task soak`): agents with Claude-Code-sized
 * episodes against two gateway processes on one KV file, one SIGKILLed every few seconds, the
 * engine failing often. Everything the agents were answered is recorded, exactly, as one chain
 * per session, and the KV file holds nothing half-written. The soak's own checks are shown to
 * find what they look for.
 */
import assert from "node:assert/strict";
import { formatReport, runSoak } from "../../bench/soak.ts";
import { inexactTurns } from "../../bench/_soak_chains.ts";
import type { AnsweredCall } from "../../bench/_soak_engine.ts";
import { scanKv } from "../../bench/_soak_kv_scan.ts";
import { TokenHash } from "../../bench/_token_hash.ts";
import { scriptedLogprob } from "../../lib/scripted_engine/mod.ts";
import { keys } from "../../lib/kv/mod.ts";
import { startGateway } from "../_gateway.ts";
import { bashCall, followUp, postMessages } from "./_gateway_process.ts";

Deno.test("a short soak under SIGKILLs and engine faults loses, half-writes and forks no turn", async () => {
  const report = await runSoak({
    durationMs: 20_000,
    agents: 12,
    killEveryMs: [1_500, 3_000],
    // Often enough that every kind plays within 20 s.
    faults: { unavailable: 0.04, hang: 0.02, drop: 0.04, slow: 0.05, abort: 0.06 },
    replyLoss: 0.04,
    turnsPerEpisode: [4, 12],
    drainMs: 30_000,
    rssEveryMs: 5_000,
    seed: 7,
    log: () => {},
  });
  const figures = formatReport(report);
  assert.equal(report.lost, 0, figures);
  assert.equal(report.halfWritten, 0, figures);
  assert.equal(report.falseForks, 0, figures);
  assert.equal(report.inexact, 0, figures);
  assert.equal(report.unacknowledged, 0, figures);
  assert.equal(report.unfinished, 0, figures);
  assert.deepEqual(report.errors, [], figures);
  assert.equal(report.committed, report.accepted, figures);
  assert.ok(report.committed > 0, figures);
  assert.ok(report.kills > 0 && report.restarts === report.kills, figures);
  for (const [kind, count] of Object.entries(report.faults)) {
    assert.ok(count > 0, `no ${kind} fault was injected\n${figures}`);
  }
  assert.ok(report.aborts > 0, `no recorded turn resumed an engine abort\n${figures}`);
  assert.ok(report.repliesLost > 0 && report.replayed > 0, `no reply was replayed\n${figures}`);
  assert.ok(report.retried > 0, figures);
});

Deno.test("a short soak on PostgreSQL, two hosts under SIGKILLs, engine faults and database restarts, loses, half-writes and forks no turn", async () => {
  const report = await runSoak({
    store: "postgres",
    databaseRestartEveryMs: [5_000, 8_000],
    // Down longer than a store call waits: every turn that reaches the store then is a 503,
    // whatever the machine's speed (twelve agents send several a second).
    databaseDownMs: [2_500, 3_500],
    storeTimeoutMs: 1_000,
    durationMs: 20_000,
    agents: 12,
    killEveryMs: [1_500, 3_000],
    faults: { unavailable: 0.04, hang: 0.02, drop: 0.04, slow: 0.05, abort: 0.06 },
    replyLoss: 0.04,
    turnsPerEpisode: [4, 12],
    drainMs: 30_000,
    rssEveryMs: 5_000,
    seed: 11,
    log: () => {},
  });
  const figures = formatReport(report);
  assert.equal(report.lost, 0, figures);
  assert.equal(report.halfWritten, 0, figures);
  assert.equal(report.falseForks, 0, figures);
  assert.equal(report.inexact, 0, figures);
  assert.equal(report.unacknowledged, 0, figures);
  assert.equal(report.unfinished, 0, figures);
  assert.deepEqual(report.errors, [], figures);
  assert.equal(report.committed, report.accepted, figures);
  assert.ok(report.committed > 0, figures);
  assert.ok(report.kills > 0 && report.restarts === report.kills, figures);
  assert.ok((report.databaseRestarts ?? 0) > 0, figures);
  assert.ok((report.statuses[503] ?? 0) > 0, `no turn met the database down\n${figures}`);
});

Deno.test("scanKv() passes recorded turns and counts a missing chunk, an orphan chunk and a stray replay", async () => {
  const gw = await startGateway({ script: [bashCall("ls"), bashCall("cat a")] });
  try {
    const { id, token } = await gw.openSession();
    let messages: unknown[] = [{ role: "user", content: "Look around." }];
    for (let k = 0; k < 2; k++) {
      const response = await postMessages(gw.url, token, messages);
      assert.equal(response.status, 200, await response.clone().text());
      messages = followUp(messages, await response.json(), k);
    }
    const clean = await scanKv(gw.kv);
    assert.deepEqual(
      [clean.halfWritten, clean.turns, clean.chains],
      [0, 2, 1],
      clean.problems.join(),
    );

    const [chunk] = await Array.fromAsync(gw.kv.list({ prefix: keys.sessionChunks(id) }));
    await gw.kv.delete(chunk.key);
    await gw.kv.set(keys.turnChunk(id, "c0", 7, "f".repeat(32), 0), new Uint8Array(16));
    await gw.kv.set(keys.replay(id, "digest"), { chainId: "c0", index: 9, rid: "r".repeat(32) });
    const broken = await scanKv(gw.kv);
    assert.equal(broken.halfWritten, 3, broken.problems.join("\n"));
    assert.match(broken.problems.join("\n"), /0 of 1 chunks/);
    assert.match(broken.problems.join("\n"), /a chunk of no turn record/);
    assert.match(broken.problems.join("\n"), /names no turn/);
  } finally {
    await gw.close();
  }
});

/** A ledger of answered calls, as the soak engine keeps one. */
function ledger(calls: { rid: string; prompt: number[]; output: number[]; finish: string }[]) {
  const answered = calls.map((call, i): AnsweredCall => ({
    rid: call.rid,
    receivedAt: i,
    promptDigest: new TokenHash().update(call.prompt).digest(),
    outputLength: call.output.length,
    outputDigest: new TokenHash().update(call.output).digest(),
    finish: call.finish,
  }));
  return {
    answered: (rid: string) => answered.find((call) => call.rid === rid),
    answeredWithPrompt: (digest: string) => answered.filter((c) => c.promptDigest === digest),
  };
}

Deno.test("inexactTurns() holds a chain against the engine's calls, resumed aborts included", () => {
  const EOS = 151_645;
  const turn = (
    rid: string,
    index: number,
    input_len: number,
    delta: number[],
    output: number[],
  ) => ({
    rid,
    index,
    input_len,
    aborts: index,
    discarded: false,
    tokens: { delta, output, logprobs: output.map((t, i) => scriptedLogprob(t, i)), closing: [] },
  });
  const chain = () => ({
    id: "c0",
    wiped_at: null,
    turns: [turn("a", 0, 3, [1, 2, 3], [10, 11, EOS]), turn("b", 1, 8, [4, 5], [12, EOS])],
  });
  const engine = ledger([
    { rid: "a", prompt: [1, 2, 3], output: [10, 11, EOS], finish: "stop" },
    // Turn b was aborted after one token and resumed from prompt + that token.
    { rid: "b", prompt: [1, 2, 3, 10, 11, EOS, 4, 5], output: [12], finish: "abort" },
    { rid: "b2", prompt: [1, 2, 3, 10, 11, EOS, 4, 5, 12], output: [EOS], finish: "stop" },
  ]);
  const exact = chain();
  // The resumed call's logprobs start again at position 0.
  exact.turns[1].tokens.logprobs[1] = scriptedLogprob(EOS, 0);
  assert.deepEqual(inexactTurns(exact, engine), []);

  const otherPrompt = structuredClone(exact);
  otherPrompt.turns[1].tokens.delta[0] = 6;
  assert.match(inexactTurns(otherPrompt, engine).join(), /turn 1 \(b\): the engine's prompt/);
  const otherLogprob = structuredClone(exact);
  otherLogprob.turns[0].tokens.logprobs[2] = -1;
  assert.match(inexactTurns(otherLogprob, engine).join(), /turn 0 \(a\): logprobs/);
  const unresumed = structuredClone(exact);
  unresumed.turns[1].aborts = 0;
  assert.match(inexactTurns(unresumed, engine).join(), /0 aborts recorded, the engine played 1/);
});
