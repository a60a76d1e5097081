import assert from "node:assert/strict";
import { type ChainHeader, segmentKind, type TurnRecord } from "../../lib/chain/mod.ts";
import { keys } from "../../lib/kv/keys.ts";
import {
  commitTurn,
  createSession,
  getChain,
  getSession,
  listChains,
  readAllTurns,
  readLiveTurns,
  readTurnTokens,
  registerChain,
  type SessionRecord,
  type TurnCommit,
} from "../../lib/session/mod.ts";
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
    const record = await kv.get<TurnRecord>(keys.turn(SID, "c0", 0, turn.turn.rid));
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
    assert.deepEqual(
      (await getChain(kv, SID, "c0")).value,
      header("c0", 2, 15 + 10, turn.turn.rid),
    );
    const records = await readLiveTurns(kv, turn.header);
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
    const record = await kv.get<TurnRecord>(keys.turn(SID, "c0", 1, winner.turn.rid));
    assert.deepEqual(record.value, winner.turn);
    assert.equal((await kv.get(keys.turn(SID, "c0", 1, loser.turn.rid))).value, null);
    assert.deepEqual(await readBack(kv, "c0", record.value!), tokensOf(3, 2, 5));
  } finally {
    kv.close();
  }
});

Deno.test("commitTurn() returns null for a new chain whose header already exists", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const absent = await getChain(kv, SID, "c0");
    const winner = turnCommit(absent, "c0", 0, tokensOf(4, 1));
    const first = await commitTurn(kv, winner);
    assert.equal(await commitTurn(kv, turnCommit(absent, "c0", 0, tokensOf(9, 9, 3))), null);
    assert.equal((await getChain(kv, SID, "c0")).versionstamp, first);
    assert.deepEqual((await readAllTurns(kv, SID, "c0")).map((r) => r.rid), [winner.turn.rid]);
  } finally {
    kv.close();
  }
});

Deno.test("registerChain() records the session, the empty header and the retired chain at once", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await createSession(kv, session());
    await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokensOf(4, 2)));
    const sessionEntry = await getSession(kv, SID) as Deno.KvEntry<SessionRecord>;
    const oldMain = await getChain(kv, SID, "c0") as Deno.KvEntry<ChainHeader>;
    const nextSession = session({ chainCount: 2, mainChain: "c1" });
    const retired: ChainHeader = { ...oldMain.value, wipedAt: 5 };
    const fresh: ChainHeader = { ...header("c1", 0, 0), parent: "c0" };
    const stamp = await registerChain(kv, {
      session: { record: sessionEntry.value, versionstamp: sessionEntry.versionstamp },
      next: nextSession,
      header: fresh,
      retire: { header: retired, versionstamp: oldMain.versionstamp },
    });
    assert.notEqual(stamp, null);
    assert.deepEqual((await getSession(kv, SID)).value, nextSession);
    assert.deepEqual((await getChain(kv, SID, "c0")).value, retired);
    const registered = await getChain(kv, SID, "c1");
    assert.deepEqual(registered.value, fresh);
    assert.equal(registered.versionstamp, stamp);
    assert.deepEqual((await listChains(kv, SID)).map((c) => [c.id, segmentKind(c)]), [
      ["c0", "wipe"],
      ["c1", "final"],
    ]);
  } finally {
    kv.close();
  }
});

Deno.test("registerChain() writes nothing when the session changed", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await createSession(kv, session());
    const stale = await getSession(kv, SID) as Deno.KvEntry<SessionRecord>;
    await kv.set(keys.session(SID), session({ status: "closed" }));
    const result = await registerChain(kv, {
      session: { record: stale.value, versionstamp: stale.versionstamp },
      next: session({ mainChain: "c1", chainCount: 2 }),
      header: header("c1", 0, 0),
    });
    assert.equal(result, null);
    assert.equal((await getChain(kv, SID, "c1")).value, null);
    assert.equal((await getSession(kv, SID)).value?.status, "closed");
  } finally {
    kv.close();
  }
});

Deno.test("registerChain() writes nothing when the chain to retire changed, or the id is taken", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await createSession(kv, session());
    await commitTurn(kv, turnCommit(await getChain(kv, SID, "c0"), "c0", 0, tokensOf(4, 2)));
    const oldMain = await getChain(kv, SID, "c0") as Deno.KvEntry<ChainHeader>;
    await commitTurn(kv, turnCommit(oldMain, "c0", 1, tokensOf(1, 1)));
    const entry = await getSession(kv, SID) as Deno.KvEntry<SessionRecord>;
    const register = (id: string, retire?: Deno.KvEntry<ChainHeader>) =>
      registerChain(kv, {
        session: { record: entry.value, versionstamp: entry.versionstamp },
        next: session({ mainChain: id, chainCount: 2 }),
        header: header(id, 0, 0),
        retire: retire
          ? { header: { ...retire.value, wipedAt: 9 }, versionstamp: retire.versionstamp }
          : undefined,
      });
    assert.equal(await register("c1", oldMain), null);
    assert.equal((await getChain(kv, SID, "c0")).value?.wipedAt, null);
    assert.equal((await getChain(kv, SID, "c1")).value, null);
    assert.equal(await register("c0"), null, "an existing header is never overwritten");
  } finally {
    kv.close();
  }
});

Deno.test("readLiveTurns() follows the parent links from the header past a discarded turn", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const commits: TurnCommit[] = [];
    for (let index = 0; index < 3; index++) {
      const turn = turnCommit(await getChain(kv, SID, "c0"), "c0", index, tokensOf(2, 1, index));
      assert.notEqual(await commitTurn(kv, turn), null);
      commits.push(turn);
    }
    // A rewind keeps turn 0 and records another turn 1 in place of turns 1 and 2.
    const tip = await getChain(kv, SID, "c0");
    const again = turnCommit(tip, "c0", 1, tokensOf(5, 2, 9));
    const rewound: TurnCommit = {
      ...again,
      turn: { ...again.turn, parent: commits[0].turn.rid },
      header: { ...again.header, turnCount: 2 },
    };
    assert.notEqual(await commitTurn(kv, rewound), null);
    const live = await readLiveTurns(kv, rewound.header);
    assert.deepEqual(live.map((r) => r.rid), [commits[0].turn.rid, rewound.turn.rid]);
    assert.equal((await readAllTurns(kv, SID, "c0")).length, 4);
    assert.deepEqual(await readLiveTurns(kv, header("other", 0, 0)), []);
  } finally {
    kv.close();
  }
});

Deno.test("readLiveTurns() throws when a linked turn is missing", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const commits: TurnCommit[] = [];
    for (let index = 0; index < 3; index++) {
      const turn = turnCommit(await getChain(kv, SID, "c0"), "c0", index, tokensOf(2, 1));
      await commitTurn(kv, turn);
      commits.push(turn);
    }
    const tip = commits[2].header;
    await assert.rejects(() => readLiveTurns(kv, { ...tip, turnCount: 4 }), /3 of 4 turns linked/);
    await kv.delete(keys.turn(SID, "c0", 1, commits[1].turn.rid));
    await assert.rejects(() => readLiveTurns(kv, tip), /is missing/);
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
