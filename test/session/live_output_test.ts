/**
 * A turn's output parsed as its tokens arrive, for every served family with its own tokenizer:
 * the events add up to the reply parsed from the whole output however the tokens are cut, with
 * characters split across tokens, stop tokens, stop strings and outputs cut short.
 */
import assert from "node:assert/strict";
import type { TurnEnd } from "../../lib/chain/mod.ts";
import { LiveOutput } from "../../lib/session/live_output.ts";
import { parseTurnOutput, turnText } from "../../lib/session/output.ts";
import { type ChatTokenizer, DecodeStream, withFormats } from "../../lib/tokenizer/mod.ts";
import { familyTokenizer } from "../_families.ts";
import { qwen3 } from "../_gateway.ts";
import { fold, FORMATS, TABLE, TOOLS } from "../output/_outputs.ts";
import { random } from "../_random.ts";

/** The tokenizer of a table format: the family's own vocabulary, serving that format. */
async function tokenizerFor(format: string): Promise<ChatTokenizer> {
  switch (format) {
    case "qwen3":
    case "qwen3_coder":
      return withFormats(await qwen3(), FORMATS[format]);
    case "deepseekv31":
      return await familyTokenizer("deepseek_v31");
    case "gpt-oss":
      return await familyTokenizer("gpt_oss");
    default:
      return await familyTokenizer(format as "glm45" | "glm47" | "kimi_k2");
  }
}

const UNICODE = " Ünïcödé 你好世界 🎉🧪 ﷽ ";
const END_OF_TURN: TurnEnd = { reason: "end_of_turn", stopSequence: null };
const LENGTH: TurnEnd = { reason: "length", stopSequence: null };

/** Feeds `output` cut into `chunks` and checks the events against the whole output's parse. */
function check(
  tokenizer: ChatTokenizer,
  output: number[],
  end: TurnEnd,
  startsInReasoning: boolean,
  cuts: number[][][],
  stop: string[] = [],
) {
  const expected = parseTurnOutput(tokenizer, output, end, startsInReasoning, TOOLS).blocks;
  for (const chunks of cuts) {
    const live = new LiveOutput(tokenizer, { startsInReasoning, tools: TOOLS, stop });
    const events = chunks.flatMap((chunk) => live.push(chunk));
    const settled = live.end(turnText(tokenizer, output, end));
    assert.ok(settled.exact, `exact for ${JSON.stringify(chunks)}`);
    assert.deepEqual(fold([...events, ...settled.events]), expected, JSON.stringify(chunks));
  }
}

/** `ids` whole, one token at a time, and cut at random under a few seeds. */
function cutsOf(ids: number[], seeds = 6): number[][][] {
  const cuts = [[ids], ids.map((id) => [id])];
  for (let seed = 1; seed <= seeds; seed++) {
    const next = random(seed);
    const chunks: number[][] = [];
    for (let at = 0; at < ids.length;) {
      const size = 1 + Math.floor(next() * 5);
      chunks.push(ids.slice(at, at + size));
      at += size;
    }
    cuts.push(chunks);
  }
  return cuts;
}

Deno.test("LiveOutput adds up to the reply for every family's outputs, in its own tokens, however they are cut", async () => {
  for (const [format, startsInReasoning, text] of TABLE) {
    const tokenizer = await tokenizerFor(format);
    const stopId = tokenizer.ending.stopIds[0];
    for (const body of [text, text.replace(/ /, UNICODE)]) {
      const ids = tokenizer.encode(body);
      check(tokenizer, [...ids, stopId], END_OF_TURN, startsInReasoning, cutsOf([...ids, stopId]));
      check(tokenizer, ids, LENGTH, startsInReasoning, cutsOf(ids, 2));
    }
  }
});

Deno.test("LiveOutput holds a stop token until it is known to end the output", async () => {
  const tokenizer = await qwen3();
  const [stopId] = tokenizer.ending.stopIds;
  const ids = [...tokenizer.encode("before"), stopId, ...tokenizer.encode(" after")];
  const live = new LiveOutput(tokenizer, { startsInReasoning: false, tools: TOOLS, stop: [] });
  assert.deepEqual(live.push(ids.slice(0, -2)), [{ type: "text", index: 0, text: "before" }]);
  assert.deepEqual(live.push(ids.slice(-2)), [
    { type: "text", index: 0, text: `${tokenizer.eosToken} after` },
  ]);
  check(tokenizer, ids, LENGTH, false, cutsOf(ids));
});

Deno.test("LiveOutput never sends text a stop string cuts off: the reply ends where the string starts", async () => {
  const tokenizer = await qwen3();
  const stop = ["STOP here", "🎉!"];
  for (
    const [text, matched] of [
      ["Some answer STOP here and beyond", "STOP here"],
      ["Party 🎉 time 🎉! more", "🎉!"],
      ["STOP here", "STOP here"],
    ]
  ) {
    // The engine stops at the token that completes the string, which stays in the output.
    const all = tokenizer.encode(text);
    let length = 1;
    while (!tokenizer.decode(all.slice(0, length)).includes(matched)) length++;
    const output = all.slice(0, length);
    const end: TurnEnd = { reason: "stop_sequence", stopSequence: matched };
    check(tokenizer, output, end, false, cutsOf(output), stop);
  }
});

Deno.test("DecodeStream sends each character whole, adding up to the decode of all", async () => {
  for (const tokenizer of [await qwen3(), await familyTokenizer("deepseek_v31")]) {
    const text = `a${UNICODE}b🎉🎉c`;
    const ids = tokenizer.encode(text);
    const stream = new DecodeStream((chunk) => tokenizer.decode(chunk));
    const pieces = [...ids.map((id) => stream.push([id])), stream.end()];
    assert.equal(pieces.join(""), tokenizer.decode(ids));
    for (const piece of pieces) assert.ok(!piece.includes("\uFFFD"), JSON.stringify(pieces));
    assert.ok(
      pieces.filter((piece) => piece === "").length > 0,
      "some tokens hold part of a character",
    );
  }
});
