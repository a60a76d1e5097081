/**
 * Real models do not sample text the way the tokenizer encodes it: "hello" as h,e,l,l,o, an
 * emoji as its four byte tokens. With the scripted engine spelling text character by character,
 * over each protocol, streamed and not: every turn is flagged `roundtrip_mismatch` and counted,
 * trained as sampled by default (its mask-1 tokens and logprobs are the engine's, whole), masked
 * only under `ROUNDTRIP_POLICY=mask`; and what the client reads, streamed in chunks that end in
 * the middle of characters, is exactly the sampled text, with no replacement character.
 */
import assert from "node:assert/strict";
import { assertChainExact } from "../_chain_exact.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../_gateway.ts";
import { countable, moved, parseExposition } from "../_prometheus.ts";
import { MESSAGES, type Protocol, PROTOCOLS, send } from "../_protocols.ts";

const call = (name: string, args: Record<string, unknown>) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

/** A tool loop's replies: reasoning, CJK, emoji and accents, then a call, then an answer. */
const REPLIES = [
  `<think>\nFirst the files — 文件 🎉.\n</think>\n\nLooking: ünïcödé 👋🏽.\n${
    call("Bash", { command: "ls 文件" })
  }`,
  "<think>\nDone.\n</think>\n\nTwo files: a.txt 🎉 and b.txt — ça va.",
];
/** What the client reads of each reply as text (reasoning and answer; calls are parsed). */
const TEXTS = [
  ["First the files — 文件 🎉.", "Looking: ünïcödé 👋🏽."],
  ["Done.", "Two files: a.txt 🎉 and b.txt — ça va."],
];
/** Runs the two-turn tool loop of `protocol`; returns the session and each reply's texts. */
async function loop(gw: TestGateway, protocol: Protocol, stream: boolean) {
  const { id, token } = await gw.openSession();
  let request = protocol.first({ tools: [{ name: "Bash" }], question: "What is here?", stream });
  const texts: string[][] = [];
  const raws: string[] = [];
  for (let turn = 0; turn < REPLIES.length; turn++) {
    const read = await send(gw, protocol, token, request);
    raws.push(read.raw);
    texts.push(read.texts);
    if (turn + 1 < REPLIES.length) request = protocol.next(request, read.reply, { result: "a b" });
  }
  return { id, texts, raws };
}

for (const protocol of PROTOCOLS) {
  for (const stream of [false, true]) {
    const form = stream ? "streamed" : "unstreamed";
    Deno.test(`${protocol.name} (${form}): outputs sampled character by character are trained exactly as sampled, and read as sampled`, async () => {
      const gw = await startGateway({ script: REPLIES, spelling: "characters" });
      try {
        const { id, texts, raws } = await loop(gw, protocol, stream);
        // Two turns, each sampled in another split than the tokenizer's.
        const calls = gw.engine.calls;
        assert.equal(calls.length, 2);
        for (const [k, engineCall] of calls.entries()) {
          const text = `${REPLIES[k]}<|im_end|>`;
          assert.equal(gw.tokenizer.decode(engineCall.output!), text);
          assert.notDeepEqual(engineCall.output, gw.tokenizer.encode(text));
        }
        const samples = await gw.samples(id);
        assertChainExact(calls, samples, `${protocol.name} ${form}`);
        assert.deepEqual(
          samples[0].turns.map((turn) => turn.flags),
          [["roundtrip_mismatch"], ["roundtrip_mismatch"]],
        );
        // What the client read is the sampled text, whole; no character was ever cut in two.
        assert.deepEqual(texts, TEXTS);
        for (const raw of raws) assert.ok(!raw.includes("\uFFFD") && !raw.includes("\\ufffd"));
      } finally {
        await gw.close();
      }
    });
  }
}

Deno.test("/metrics counts turns sampled in another split; ROUNDTRIP_POLICY=mask still masks them", async () => {
  for (const policy of ["keep", "mask"]) {
    const gw = await startGateway({
      script: REPLIES,
      spelling: "characters",
      env: { ROUNDTRIP_POLICY: policy },
    });
    try {
      const scrape = async () => {
        const response = await gw.fetch("/metrics", {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        return countable(await parseExposition(await response.text()));
      };
      const before = await scrape();
      const { id } = await loop(gw, MESSAGES, true);
      const flags = moved(before, await scrape());
      assert.equal(
        flags[
          'rollout_gateway_turn_flags_total{flag="roundtrip_mismatch",host="test-host",worker="0"}'
        ],
        2,
      );
      assert.equal(
        flags['rollout_gateway_turn_flags_total{flag="masked",host="test-host",worker="0"}'],
        policy === "mask" ? 2 : undefined,
      );
      const [sample] = await gw.samples(id);
      const sampled = sample.loss_mask.filter((bit) => bit === 1).length;
      assert.equal(
        sampled,
        policy === "mask" ? 0 : gw.engine.calls.reduce((n, c) => n + c.output!.length, 0),
      );
    } finally {
      await gw.close();
    }
  }
});
