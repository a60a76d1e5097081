import assert from "node:assert/strict";
import { keys } from "../../lib/kv/keys.ts";
import type { ChainHeader, SessionRecord, TurnRecord } from "../../lib/kv/records.ts";
import {
  commitTurn,
  createSession,
  getChain,
  getSession,
  listChains,
  readTurns,
  readTurnTokens,
  type TurnCommit,
} from "../../lib/kv/session_store.ts";
import { chunkStamps, header, readBack, session, SID, tokensOf, turnCommit } from "./_store.ts";

Deno.test("createSession() stores a session and refuses a duplicate id", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    assert.equal(await createSession(kv, session()), true);
    const stored = await getSession(kv, SID);
    assert.deepEqual(stored.value, session());
    assert.equal(await createSession(kv, session({ tokenDigest: "cd".repeat(32) })), false);
    const after = await getSession(kv, SID);
    assert.deepEqual(after.value, session());
    assert.equal(after.versionstamp, stored.versionstamp);
    assert.equal((await getSession(kv, "nobody")).value, null);
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() writes a new chain's turn, chunks and header in one commit", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const tokens = tokensOf(20, 5);
    const turn = turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokens);
    const stamp = await commitTurn(kv, turn);
    assert.equal(typeof stamp, "string");
    const chain = await getChain(kv, SID, "c0");
    assert.equal(chain.versionstamp, stamp);
    assert.deepEqual(chain.value, turn.header);
    const record = await kv.get<TurnRecord>(keys.turn(SID, "c0", 0));
    assert.equal(record.versionstamp, stamp);
    assert.deepEqual(record.value, turn.turn);
    assert.deepEqual(await chunkStamps(kv, "c0", 0), [stamp]);
    assert.deepEqual(await readBack(kv, "c0", turn.turn), tokens);
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() extends a chain guarded by the header it read", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const first = tokensOf(10, 4, 1);
    await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", 0, first));
    const second = tokensOf(6, 3, 2);
    const read = await getChain(kv, SID, "c0");
    const turn = turnCommit(read, "c0", 1, second);
    const stamp = await commitTurn(kv, turn);
    assert.notEqual(stamp, null);
    assert.ok(stamp! > read.versionstamp!);
    assert.deepEqual((await getChain(kv, SID, "c0")).value, header("c0", 2, 15 + 10));
    const records = await readTurns(kv, SID, "c0", 2);
    assert.deepEqual(records.map((r) => r.index), [0, 1]);
    assert.deepEqual(await readBack(kv, "c0", records[0]), first);
    assert.deepEqual(await readBack(kv, "c0", records[1]), second);
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() returns null on a stale chain entry and leaves turn and header unchanged", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokensOf(10, 4)));
    const stale = await getChain(kv, SID, "c0");
    const winner = turnCommit(stale, "c0", 1, tokensOf(3, 2, 5));
    const winnerStamp = await commitTurn(kv, winner);
    assert.notEqual(winnerStamp, null);
    const loser = turnCommit(stale, "c0", 1, tokensOf(8, 8, 9));
    assert.equal(await commitTurn(kv, loser), null);
    const chain = await getChain(kv, SID, "c0");
    assert.equal(chain.versionstamp, winnerStamp);
    assert.deepEqual(chain.value, winner.header);
    const record = await kv.get<TurnRecord>(keys.turn(SID, "c0", 1));
    assert.deepEqual(record.value, winner.turn);
    assert.deepEqual(await readBack(kv, "c0", record.value!), tokensOf(3, 2, 5));
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() returns null for a new chain whose header already exists", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const absent = await getChain(kv, SID, "c0");
    const first = await commitTurn(kv, turnCommit(absent, "c0", 0, tokensOf(4, 1)));
    assert.equal(await commitTurn(kv, turnCommit(absent, "c0", 0, tokensOf(9, 9, 3))), null);
    assert.equal((await getChain(kv, SID, "c0")).versionstamp, first);
    const record = await kv.get<TurnRecord>(keys.turn(SID, "c0", 0));
    assert.equal(record.versionstamp, first);
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() commits the session and retired chain updates with the turn", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await createSession(kv, session());
    await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokensOf(4, 2)));
    const sessionEntry = await getSession(kv, SID) as Deno.KvEntry<SessionRecord>;
    const oldMain = await getChain(kv, SID, "c0") as Deno.KvEntry<ChainHeader>;
    const nextSession = session({ chains: ["c0", "c1"], mainChain: "c1" });
    const retired: ChainHeader = { ...oldMain.value, kind: "wipe" };
    const turn: TurnCommit = {
      ...turnCommit(await getChain(kv, SID, "c1"), "c1", 0, tokensOf(7, 3)),
      session: { entry: sessionEntry, next: nextSession },
      retire: { entry: oldMain, next: retired },
    };
    const stamp = await commitTurn(kv, turn);
    assert.notEqual(stamp, null);
    const storedSession = await getSession(kv, SID);
    assert.deepEqual(storedSession.value, nextSession);
    assert.equal(storedSession.versionstamp, stamp);
    const storedOld = await getChain(kv, SID, "c0");
    assert.deepEqual(storedOld.value, retired);
    assert.equal(storedOld.versionstamp, stamp);
    assert.equal((await getChain(kv, SID, "c1")).versionstamp, stamp);
    assert.deepEqual((await listChains(kv, SID)).map((c) => [c.id, c.kind]), [
      ["c0", "wipe"],
      ["c1", "final"],
    ]);
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() returns null and writes nothing visible when the session changed", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await createSession(kv, session());
    const stale = await getSession(kv, SID) as Deno.KvEntry<SessionRecord>;
    await kv.set(keys.session(SID), session({ status: "closed" }));
    const turn: TurnCommit = {
      ...turnCommit(await getChain(kv, SID, "c1"), "c1", 0, tokensOf(7, 3)),
      session: { entry: stale, next: session({ mainChain: "c1", chains: ["c0", "c1"] }) },
    };
    assert.equal(await commitTurn(kv, turn), null);
    assert.equal((await getChain(kv, SID, "c1")).value, null);
    assert.equal((await kv.get(keys.turn(SID, "c1", 0))).value, null);
    assert.equal((await getSession(kv, SID)).value?.status, "closed");
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() returns null when the chain to retire changed", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokensOf(4, 2)));
    const oldMain = await getChain(kv, SID, "c0") as Deno.KvEntry<ChainHeader>;
    await commitTurn(kv, turnCommit(oldMain, "c0", 1, tokensOf(1, 1)));
    const turn: TurnCommit = {
      ...turnCommit(await getChain(kv, SID, "c1"), "c1", 0, tokensOf(7, 3)),
      retire: { entry: oldMain, next: { ...oldMain.value, kind: "wipe" } },
    };
    assert.equal(await commitTurn(kv, turn), null);
    assert.equal((await getChain(kv, SID, "c0")).value?.kind, "final");
    assert.equal((await getChain(kv, SID, "c1")).value, null);
  } finally {
    kv.close();
  }
});

Deno.test("readTurns() returns only the first count turns, in index order", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    for (let index = 0; index < 12; index++) {
      const chain = await getChain(kv, SID, "c0");
      assert.notEqual(
        await commitTurn(kv, turnCommit(chain, "c0", index, tokensOf(2, 1, index))),
        null,
      );
    }
    assert.deepEqual((await readTurns(kv, SID, "c0", 11)).map((r) => r.index), [
      0,
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      9,
      10,
    ]);
    assert.deepEqual(await readTurns(kv, SID, "c0", 0), []);
    assert.deepEqual(await readTurns(kv, SID, "other", 0), []);
  } finally {
    kv.close();
  }
});

Deno.test("readTurns() throws when turns are missing", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    for (let index = 0; index < 3; index++) {
      await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", index, tokensOf(2, 1)));
    }
    await assert.rejects(() => readTurns(kv, SID, "c0", 4), /3 of 4 turns found/);
    await kv.delete(keys.turn(SID, "c0", 1));
    await assert.rejects(() => readTurns(kv, SID, "c0", 3), /2 of 3 turns found/);
    await assert.rejects(() => readTurns(kv, SID, "c0", 2), /1 of 2 turns found/);
  } finally {
    kv.close();
  }
});

Deno.test("readTurnTokens() throws when a chunk is missing", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const turn = turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokensOf(40_000, 5_000));
    await commitTurn(kv, turn);
    assert.ok(turn.chunks.length > 2);
    await kv.delete(keys.turnChunk(SID, "c0", 0, turn.turn.rid, 1));
    await assert.rejects(() => readTurnTokens(kv, SID, "c0", turn.turn), /chunk 1 is missing/);
  } finally {
    kv.close();
  }
});
