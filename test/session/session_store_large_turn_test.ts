import assert from "node:assert/strict";
import type { TurnTokens } from "../../lib/kv/chunked.ts";
import { KV_MAX_COMMIT_BYTES } from "../../lib/kv/keys.ts";
import { commitTurn, getChain, readLiveTurns } from "../../lib/session/mod.ts";
import { chunkStamps, readBack, SID, tokensOf, turnCommit } from "./_store.ts";

Deno.test("commitTurn() writes a turn larger than one commit in several commits", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const tokens = tokensOf(250_000, 50_000);
    const turn = turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokens);
    assert.ok(turn.chunks.length > 13, `${turn.chunks.length} chunks`);
    const stamp = await commitTurn(kv, turn);
    assert.notEqual(stamp, null);
    const stamps = await chunkStamps(kv, "c0", 0);
    assert.equal(stamps.length, turn.chunks.length);
    assert.equal(stamps.at(-1), stamp);
    assert.ok(new Set(stamps).size >= 2, "chunks were written in more than one commit");
    assert.ok(stamps[0] < stamp!);
    const perCommit = new Map<string, number>();
    stamps.forEach((s, j) => perCommit.set(s, (perCommit.get(s) ?? 0) + turn.chunks[j].length));
    for (const bytes of perCommit.values()) assert.ok(bytes < KV_MAX_COMMIT_BYTES);
    const [record] = await readLiveTurns(kv, turn.header);
    assert.deepEqual(record, turn.turn);
    assert.deepEqual(await readBack(kv, "c0", record), tokens);
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() writes twelve full chunks with the records in a single commit", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const tokens: TurnTokens = { ...tokensOf(193_533, 0), closing: [] };
    const turn = turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokens);
    assert.equal(turn.chunks.length, 12);
    const stamp = await commitTurn(kv, turn);
    assert.deepEqual(await chunkStamps(kv, "c0", 0), Array(12).fill(stamp));
    assert.deepEqual(await readBack(kv, "c0", turn.turn), tokens);
  } finally {
    kv.close();
  }
});

/** Two writers race for turn 1 of a chain; the loser's turn needs several commits. */
async function raceForTurnOne(kv: Deno.Kv) {
  await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokensOf(10, 2)));
  const stale = await getChain(kv, SID, "c0");
  const winner = turnCommit(stale, "c0", 1, tokensOf(5, 5, 7));
  const winnerStamp = await commitTurn(kv, winner);
  const loser = turnCommit(stale, "c0", 1, tokensOf(250_000, 50_000, 1));
  return { winner, winnerStamp, loserStamp: await commitTurn(kv, loser) };
}

Deno.test("commitTurn() of a large turn on a stale chain leaves turn and header unchanged", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const { winner, winnerStamp, loserStamp } = await raceForTurnOne(kv);
    assert.equal(loserStamp, null);
    const chain = await getChain(kv, SID, "c0");
    assert.equal(chain.versionstamp, winnerStamp);
    assert.deepEqual(chain.value, winner.header);
    const records = await readLiveTurns(kv, winner.header);
    assert.deepEqual(records[1], winner.turn);
  } finally {
    kv.close();
  }
});

Deno.test({
  name: "commitTurn() of a large turn on a stale chain keeps the winning turn's tokens readable",
  fn: async () => {
    const kv = await Deno.openKv(":memory:");
    try {
      const { winner } = await raceForTurnOne(kv);
      assert.deepEqual(await readBack(kv, "c0", winner.turn), tokensOf(5, 5, 7));
    } finally {
      kv.close();
    }
  },
});
