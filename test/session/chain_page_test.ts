import assert from "node:assert/strict";
import { flattenChain } from "../../lib/chain/mod.ts";
import { keys } from "../../lib/kv/mod.ts";
import {
  ChainNotFoundError,
  countReplay,
  deleteSession,
  getChain,
  MAX_PAGE_TOKENS,
  readChainPage,
  readLiveTurns,
  readTimeline,
  readTurnTokens,
  SessionNotFoundError,
} from "../../lib/session/mod.ts";
import { startGateway, type TestGateway } from "../_gateway.ts";

/** A session of three turns on one chain. */
async function threeTurns(gw: TestGateway): Promise<string> {
  const { id, token } = await gw.openSession();
  const history: unknown[] = [];
  for (const question of ["One?", "Two?", "Three?"]) {
    history.push({ role: "user", content: question });
    const response = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "qwen3", max_tokens: 64, messages: history }),
    });
    assert.equal(response.status, 200);
    history.push({ role: "assistant", content: (await response.json()).content });
  }
  return id;
}

Deno.test("readChainPage() pages a chain into exactly its training arrays", async () => {
  const gw = await startGateway({ script: ["First answer.", "Second answer here.", "Third."] });
  try {
    const id = await threeTurns(gw);
    const header = (await getChain(gw.kv, id, "c0")).value!;
    const live = await readLiveTurns(gw.kv, header);
    const arrays = flattenChain(
      await Promise.all(live.map(async (record) => ({
        record,
        tokens: await readTurnTokens(gw.kv, id, "c0", record),
      }))),
    );
    const ids = [...arrays.prompt_ids, ...arrays.response_ids];
    const mask = [...arrays.prompt_ids.map(() => 0), ...arrays.loss_mask];
    const shown = { ids: [] as number[], mask: [] as number[], logprobs: [] as (number | null)[] };
    let total = 0;
    for (let from = 0; from === 0 || from < total; from += 7) {
      const page = await readChainPage(gw.kv, id, "c0", { from, size: 7 });
      total = page.total;
      assert.equal(page.from, from);
      assert.equal(page.to, Math.min(total, from + 7));
      shown.ids.push(...page.ids);
      shown.mask.push(...page.mask);
      shown.logprobs.push(...page.logprobs);
      assert.equal(page.turns.length, 3);
    }
    assert.equal(total, header.tokenCount);
    assert.deepEqual(shown.ids, ids);
    assert.deepEqual(shown.mask, mask);
    // Position by position: a sampled token's logprob, null on prompt and closing tokens.
    assert.deepEqual(shown.logprobs, [
      ...arrays.prompt_ids.map(() => null),
      ...arrays.logprobs.map((lp, i) => arrays.loss_mask[i] === 1 ? lp : null),
    ]);

    // Turn starts line up with the records: turn k starts where the tokens before it end.
    const page = await readChainPage(gw.kv, id, "c0", { from: 0, size: MAX_PAGE_TOKENS });
    for (const span of page.turns) {
      assert.equal(span.outputStart, span.record.inputLen);
      assert.equal(page.parts[span.outputStart], "sampled");
      assert.equal(page.parts[span.outputStart - 1], "prompt");
    }
  } finally {
    await gw.close();
  }
});

Deno.test("readChainPage() clamps its window and finds a turn's page", async () => {
  const gw = await startGateway({ script: ["First answer.", "Second answer here.", "Third."] });
  try {
    const id = await threeTurns(gw);
    const whole = await readChainPage(gw.kv, id, "c0", { from: 0, size: MAX_PAGE_TOKENS });
    const past = await readChainPage(gw.kv, id, "c0", { from: 10 ** 9, size: 16 });
    assert.deepEqual([past.from, past.to], [whole.total - 1, whole.total], "the last token");
    const huge = await readChainPage(gw.kv, id, "c0", { from: 0, size: 10 ** 9 });
    assert.equal(huge.to - huge.from, Math.min(whole.total, MAX_PAGE_TOKENS));
    const tiny = await readChainPage(gw.kv, id, "c0", { from: 3, size: 0 });
    assert.deepEqual([tiny.from, tiny.to], [3, 4]);
    const start = whole.turns[2].start;
    const byTurn = await readChainPage(gw.kv, id, "c0", { turn: 2, size: 8 });
    assert.equal(byTurn.from, Math.floor(start / 8) * 8);
    assert.ok(byTurn.turnOf.includes(2));
    const unknownTurn = await readChainPage(gw.kv, id, "c0", { turn: 99, size: 8 });
    assert.equal(unknownTurn.from, 0);
    await assert.rejects(readChainPage(gw.kv, id, "c7", { size: 8 }), ChainNotFoundError);
    await assert.rejects(
      readChainPage(gw.kv, id, "c".repeat(200), { size: 8 }),
      ChainNotFoundError,
    );
    await assert.rejects(
      readChainPage(gw.kv, "sess_nope", "c0", { size: 8 }),
      SessionNotFoundError,
    );
  } finally {
    await gw.close();
  }
});

Deno.test("replays are counted per turn, shown by the timeline, and deleted with their session", async () => {
  const gw = await startGateway({ script: ["First answer.", "Second answer here.", "Third."] });
  try {
    const id = await threeTurns(gw);
    const [{ turns }] = await readTimeline(gw.kv, id);
    assert.deepEqual(turns.map((turn) => [turn.record.index, turn.discarded, turn.replays]), [
      [0, false, 0],
      [1, false, 0],
      [2, false, 0],
    ]);
    assert.deepEqual(turns.map((turn) => turn.record.route), ["start", "append", "append"]);
    await countReplay(gw.kv, id, "c0", turns[1].record.rid);
    await countReplay(gw.kv, id, "c0", turns[1].record.rid);
    const [again] = await readTimeline(gw.kv, id);
    assert.deepEqual(again.turns.map((turn) => turn.replays), [0, 2, 0]);
    assert.ok(await deleteSession(gw.kv, id));
    const counted = async () => {
      let n = 0;
      for await (const _ of gw.kv.list({ prefix: keys.sessionReplays(id) })) n++;
      return n;
    };
    assert.equal(await counted(), 0);
    // A deleted session's turn is not counted again (nothing outlives the session).
    await countReplay(gw.kv, id, "c0", turns[1].record.rid);
    assert.equal(await counted(), 0);
  } finally {
    await gw.close();
  }
});
