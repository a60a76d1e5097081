import assert from "node:assert/strict";
import { loadTokenizer } from "../../lib/tokenizer/mod.ts";
import {
  EDGES,
  FOLDERS,
  libraryTokenizer,
  randomTexts,
  recordedTexts,
} from "./_library_tokenizer.ts";

// The gateway installs a faster byte-level step and BPE word cache (lib/tokenizer/byte_level.ts,
// bpe_cache.ts): its tokens must be the library's, on first sight of a word and from the cache.
for (const { name, path } of FOLDERS) {
  Deno.test(`the gateway's ${name} tokenizer encodes exactly as the library's own`, async () => {
    const library = await libraryTokenizer(path);
    // gpt-oss's folder has no chat template; encoding does not use one.
    const chatTemplate = name === "gptoss"
      ? await Deno.readTextFile(new URL("../../fixtures/templates/gpt_oss.jinja", import.meta.url))
      : undefined;
    const ours = await loadTokenizer(path, { chatTemplate });
    const texts = [...EDGES, ...randomTexts(400), ...await recordedTexts()];
    const expected = texts.map((text) =>
      text.length === 0 ? [] : library.encode(text, { add_special_tokens: false })
    );
    // Twice: the second pass takes every word's merges from the cache.
    for (const pass of [1, 2]) {
      texts.forEach((text, i) => {
        assert.deepEqual(
          ours.encode(text),
          expected[i],
          `pass ${pass}: ${JSON.stringify(text.slice(0, 80))}`,
        );
      });
    }
  });
}

// What a model samples when it spells text out byte by byte (the scripted engine's
// `characters` spelling): each byte's own token, decoding to exactly the text spelled.
for (const { name, path } of FOLDERS) {
  Deno.test(`the ${name} tokenizer's byte tokens spell any text back exactly`, async () => {
    const chatTemplate = name === "gptoss"
      ? await Deno.readTextFile(new URL("../../fixtures/templates/gpt_oss.jinja", import.meta.url))
      : undefined;
    const ours = await loadTokenizer(path, { chatTemplate });
    const bytes = ours.byteIds!;
    assert.equal(bytes.length, 256);
    assert.equal(new Set(bytes).size, 256, "one token per byte");
    for (const id of bytes) assert.ok(!ours.addedIds.has(id));
    // A printable ASCII character is its own byte's token.
    for (const char of "az~!") assert.deepEqual([bytes[char.charCodeAt(0)]], ours.encode(char));
    const utf8 = new TextEncoder();
    for (const text of EDGES.filter((t) => t.isWellFormed())) {
      const spelled = [...utf8.encode(text)].map((b) => bytes[b]);
      assert.equal(ours.decode(spelled), text, JSON.stringify(text));
    }
    assert.ok(ours.addedIds.has(ours.eosId));
  });
}
