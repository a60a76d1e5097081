import assert from "node:assert/strict";
import { installFastSplit, tilingMatches } from "../../lib/tokenizer/split_step.ts";
import { EDGES, FOLDERS, libraryTokenizer, randomTexts } from "./_library_tokenizer.ts";

interface Step {
  constructor: { name: string };
  config: { invert: boolean; behavior: string };
  pattern: RegExp;
  pre_tokenize_text: (text: string) => string[];
}

/** A Split step whose own walk is counted, standing for the library's. */
function countedStep(pattern: RegExp) {
  const walked: string[] = [];
  const step: Step = {
    constructor: { name: "Split" },
    config: { invert: false, behavior: "Isolated" },
    pattern,
    pre_tokenize_text: (text) => {
      walked.push(text);
      return [`walked:${text}`];
    },
  };
  return { step, walked };
}

Deno.test("tilingMatches() gives the matches only when they cover the text with no gap", () => {
  assert.deepEqual(tilingMatches("ab 12", /[a-z]+|\d+|\s+/g), ["ab", " ", "12"]);
  assert.equal(tilingMatches("ab-12", /[a-z]+|\d+/g), null);
  assert.deepEqual(tilingMatches("", /x/g), []);
  // Empty matches take no place and are left out, as the library's walk leaves them out.
  assert.deepEqual(tilingMatches("ab", /[a-z]|(?:)/g), ["a", "b"]);
});

Deno.test("the fast Split falls back to the library's walk when the matches leave a gap", () => {
  const { step, walked } = countedStep(/\d+|\s+/gu);
  assert.equal(installFastSplit(step as never), 1);
  assert.deepEqual(step.pre_tokenize_text("12 34"), ["12", " ", "34"]);
  assert.deepEqual(step.pre_tokenize_text("a1"), ["walked:a1"]);
  assert.deepEqual(walked, ["a1"]);
});

Deno.test("a Split whose pattern seldom tiles stops trying after its trial calls", () => {
  const { step, walked } = countedStep(/\d+/gu);
  installFastSplit(step as never);
  for (let i = 0; i < 64; i++) step.pre_tokenize_text(`x${i}`);
  assert.equal(walked.length, 64);
  // Now even a text it would tile goes to the walk.
  assert.deepEqual(step.pre_tokenize_text("42"), ["walked:42"]);
});

Deno.test("only an Isolated, non-inverted Split with a global pattern is replaced", () => {
  const shapes = [
    { name: "Split", config: { invert: true, behavior: "Isolated" }, pattern: /a/g },
    { name: "Split", config: { invert: false, behavior: "Removed" }, pattern: /a/g },
    { name: "Split", config: { invert: false, behavior: "Isolated" }, pattern: /a/ },
    { name: "Metaspace", config: { invert: false, behavior: "Isolated" }, pattern: /a/g },
  ];
  for (const { name, config, pattern } of shapes) {
    const original = (text: string) => [text];
    const step = { constructor: { name }, config, pattern, pre_tokenize_text: original };
    assert.equal(installFastSplit(step as never), 0);
    assert.equal(step.pre_tokenize_text, original);
  }
  assert.equal(installFastSplit(null), 0);
});

for (const { name, path } of FOLDERS) {
  Deno.test(`the fast Split steps cut ${name}'s text as the library's steps`, async () => {
    const library = await libraryTokenizer(path);
    const fast = await libraryTokenizer(path);
    const steps = (tokenizer: typeof library) =>
      tokenizer._tokenizer.pre_tokenizer.tokenizers.slice(0, -1) as unknown as Step[];
    assert.ok(installFastSplit(fast._tokenizer.pre_tokenizer as never) >= 1);
    for (const text of [...EDGES, ...randomTexts(300)]) {
      let expected = [text];
      let actual = [text];
      steps(library).forEach((step, i) => {
        expected = expected.flatMap((piece) => step.pre_tokenize_text(piece));
        actual = actual.flatMap((piece) => steps(fast)[i].pre_tokenize_text(piece));
      });
      assert.deepEqual(actual, expected, JSON.stringify(text));
    }
  });
}
