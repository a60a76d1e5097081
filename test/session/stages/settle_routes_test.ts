/**
 * The routes stage given the rows' digest (hashed on the engine HTTP worker where they were read)
 * settles exactly as when it hashes them itself: SGLang's own rows, vLLM's rows from 0 against
 * the last report, against the recorded spans whole, and against a span that differs row by row.
 */
import assert from "node:assert/strict";
import type { ChainRoutes, RouteSpan } from "../../../lib/chain/mod.ts";
import { type ExpertRows, sha256Hex } from "../../../lib/engine/mod.ts";
import { blobChunks, keys, writeChunks } from "../../../lib/kv/mod.ts";
import { settleRoutes } from "../../../lib/session/stages/settle_routes.ts";

const MOE = { layers: 2, topK: 2, experts: 16, denseLayers: [] };
const WIDTH = 4;

/** Rows for positions `from .. to`, each value from `at(position, i)`. */
function rows(from: number, to: number, at = (p: number, i: number) => (p * 5 + i) % 16) {
  return Uint8Array.from(
    { length: (to - from) * WIDTH },
    (_, n) => at(from + Math.floor(n / WIDTH), n % WIDTH),
  );
}

Deno.test("settleRoutes() with the rows' digest given settles as when it hashes them", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    // A chain that recorded positions 0 .. 10 in two turns.
    const spans: RouteSpan[] = [];
    for (const [index, start, end] of [[0, 0, 6], [1, 6, 10]] as const) {
      const bytes = rows(start, end);
      const rid = `rid${index}`;
      const chunks = blobChunks(bytes);
      await writeChunks(kv, keys.turnRoutes("s", "c0", index, rid), chunks);
      spans.push({
        index,
        rid,
        start,
        rows: end - start,
        width: WIDTH,
        dtype: "uint8",
        digest: sha256Hex(bytes),
        chunks: chunks.length,
      });
    }
    const allRows = rows(0, 14);
    const differing = rows(0, 14, (p, i) => p === 7 || p === 8 ? 15 - i : (p * 5 + i) % 16);
    const cases: [string, ChainRoutes, ExpertRows][] = [
      ["SGLang: the own rows", { recorded: 10, spans }, {
        start: 10,
        rows: 4,
        values: rows(10, 14),
      }],
      ["vLLM: from 0, the record's spans equal", { recorded: 10, spans }, {
        start: 0,
        rows: 14,
        values: allRows,
      }],
      [
        "vLLM: from 0, the last report equal",
        { recorded: 10, spans, lastReport: { start: 0, end: 10, digest: sha256Hex(rows(0, 10)) } },
        { start: 0, rows: 14, values: allRows },
      ],
      ["vLLM: from 0, two rows of the second span differ", { recorded: 10, spans }, {
        start: 0,
        rows: 14,
        values: differing,
      }],
      ["a recompute from inside the first span", { recorded: 10, spans }, {
        start: 3,
        rows: 11,
        values: differing.slice(3 * WIDTH),
      }],
    ];
    for (const [label, recorded, reported] of cases) {
      const turn = {
        sessionId: "s",
        chainId: "c0",
        promptLength: 12,
        outputLength: 3,
        recorded,
      };
      const plain = await settleRoutes({ kv, moe: MOE }, { ...turn, reported });
      const given = await settleRoutes({ kv, moe: MOE }, {
        ...turn,
        reported: { ...reported, digest: sha256Hex(reported.values) },
      });
      assert.deepStrictEqual(given, plain, label);
      assert.deepStrictEqual(Array.from(plain.bytes).slice(0, 4 * WIDTH), Array.from(rows(10, 14)));
    }
    const mismatched = await settleRoutes({ kv, moe: MOE }, {
      sessionId: "s",
      chainId: "c0",
      promptLength: 12,
      outputLength: 3,
      recorded: { recorded: 10, spans },
      reported: { start: 0, rows: 14, values: differing, digest: sha256Hex(differing) },
    });
    assert.equal(mismatched.routes.mismatched, 2, "the differing rows are counted");
  } finally {
    kv.close();
  }
});
