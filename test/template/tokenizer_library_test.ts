import assert from "node:assert/strict";
import { loadTokenizer } from "../../lib/template/mod.ts";
import {
  EDGES,
  FOLDERS,
  libraryTokenizer,
  randomTexts,
  recordedTexts,
} from "./_library_tokenizer.ts";

// The gateway installs a faster byte-level step and BPE word cache (lib/template/byte_level.ts,
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
