import assert from "node:assert/strict";
import { byteLevelMapper, installFastByteLevel } from "../../lib/tokenizer/byte_level.ts";
import { EDGES, FOLDERS, libraryTokenizer, randomTexts } from "./_library_tokenizer.ts";

for (const { name, path } of FOLDERS) {
  Deno.test(`the fast byte-level step maps ${name}'s pieces as the library's step`, async () => {
    const library = await libraryTokenizer(path);
    const step = library._tokenizer.pre_tokenizer.tokenizers.at(-1)!;
    const mapper = byteLevelMapper(
      (step as unknown as { byte_encoder: Record<number, string> })
        .byte_encoder,
    );
    for (const piece of [...EDGES, ...randomTexts(300)]) {
      assert.deepEqual([mapper(piece)], step.pre_tokenize([piece]), JSON.stringify(piece));
    }
  });
}

Deno.test("the fast step is installed only on a plain ByteLevel step", async () => {
  const library = await libraryTokenizer(FOLDERS[0].path);
  const sequence = library._tokenizer.pre_tokenizer;
  const split = sequence.tokenizers[0];
  const before = split.pre_tokenize;
  assert.equal(installFastByteLevel(sequence as never), 1);
  assert.equal(split.pre_tokenize, before, "the Split step is left alone");
  const table: Record<number, string> = {};
  for (let b = 0; b < 256; b++) table[b] = String.fromCharCode(b + 256);
  const shapes = [
    { use_regex: true, add_prefix_space: false },
    { use_regex: false, add_prefix_space: true },
  ];
  for (const shape of shapes) {
    const original = () => ["library"];
    const step = {
      constructor: { name: "ByteLevel" },
      ...shape,
      byte_encoder: table,
      pre_tokenize: original,
    };
    assert.equal(installFastByteLevel(step), 0);
    assert.equal(step.pre_tokenize, original);
  }
  assert.equal(installFastByteLevel(null), 0);
});

Deno.test("a table where printable ASCII is not itself takes the table for every byte", () => {
  const table: Record<number, string> = {};
  for (let b = 0; b < 256; b++) table[b] = String.fromCharCode(b + 256);
  const mapper = byteLevelMapper(table);
  assert.equal(mapper("ab"), "\u0161\u0162");
  assert.equal(mapper("é"), "\u01c3\u01a9"); // UTF-8 C3 A9
});
