import assert from "node:assert/strict";
import { capacityFor, PromptIds } from "../../lib/engine/mod.ts";

const ascii = (ids: PromptIds) => new TextDecoder().decode(ids.ascii());

Deno.test("PromptIds.from() serializes ids as the comma-separated digits of a JSON array", () => {
  const ids = PromptIds.from([0, 7, 151_645, 4_294_967_295]);
  assert.equal(ascii(ids), "0,7,151645,4294967295");
  assert.deepEqual(JSON.parse(`[${ascii(ids)}]`), [0, 7, 151_645, 4_294_967_295]);
  assert.equal(ids.length, 4);
  assert.deepEqual(ids.toArray(), [0, 7, 151_645, 4_294_967_295]);
});

Deno.test("PromptIds.from() of nothing is empty", () => {
  const ids = PromptIds.from([]);
  assert.equal(ids.length, 0);
  assert.equal(ascii(ids), "");
  assert.deepEqual(ids.toArray(), []);
  assert.equal(ascii(ids.concat([3])), "3");
});

Deno.test("PromptIds.last() reads the last id back from its digits", () => {
  assert.equal(PromptIds.from([]).last(), undefined);
  for (const ids of [[0], [7], [1, 151_338], [151_338, 0], [5, 4_294_967_295], [10, 100, 1000]]) {
    assert.equal(PromptIds.from(ids).last(), ids.at(-1), JSON.stringify(ids));
  }
  const history = PromptIds.from([1, 22]);
  history.concat([333]);
  assert.equal(history.last(), 22);
  assert.equal(history.concat([]).last(), 22);
});

Deno.test("PromptIds.concat() leaves the original sequence unchanged", () => {
  const history = PromptIds.from([1, 2]);
  const prompt = history.concat([3, 4]);
  assert.deepEqual(history.toArray(), [1, 2]);
  assert.deepEqual(prompt.toArray(), [1, 2, 3, 4]);
});

Deno.test("PromptIds.concat() from the same history twice keeps both extensions apart", () => {
  const history = PromptIds.from([1, 2]);
  const a = history.concat([10, 11]);
  const b = history.concat([20]);
  const a2 = a.concat([12]);
  assert.deepEqual(a.toArray(), [1, 2, 10, 11]);
  assert.deepEqual(b.toArray(), [1, 2, 20]);
  assert.deepEqual(a2.toArray(), [1, 2, 10, 11, 12]);
  assert.deepEqual(history.concat([30]).toArray(), [1, 2, 30]);
  assert.deepEqual(a.toArray(), [1, 2, 10, 11]);
});

Deno.test("PromptIds.concat() grows past its first buffer and matches a join of all ids", () => {
  const all: number[] = [];
  let ids = PromptIds.from([]);
  for (let turn = 0; turn < 50; turn++) {
    const added = Array.from({ length: 997 }, (_, i) => (turn * 7919 + i * 104_729) % 151_936);
    all.push(...added);
    ids = ids.concat(added);
  }
  assert.equal(ids.length, all.length);
  assert.equal(ascii(ids), all.join(","));
});

Deno.test("PromptIds writes every digit count exactly, at each power of ten", () => {
  const ids = [0, 1, 4_294_967_295];
  for (let power = 10; power <= 1_000_000_000; power *= 10) ids.push(power - 1, power, power + 1);
  assert.equal(ascii(PromptIds.from(ids)), ids.join(","));
  assert.deepEqual(PromptIds.from(ids).toArray(), ids);
});

Deno.test("PromptIds.concat() rejects ids that are not token ids", () => {
  assert.throws(() => PromptIds.from([1.5]), RangeError);
  assert.throws(() => PromptIds.from([-1]), RangeError);
  assert.throws(() => PromptIds.from([2 ** 32]), RangeError);
  assert.throws(() => PromptIds.from([Number.NaN]), RangeError);
  assert.throws(() => PromptIds.from([Infinity]), RangeError);
});

Deno.test("PromptIds.concat() with the ids' digits already written copies them: the same bytes as writing them", () => {
  const history = PromptIds.from([5, 60]);
  const ids = [0, 7, 151_643, 4_294_967_295];
  const written = PromptIds.from(ids).ascii();
  const copied = history.concat(ids, written);
  assert.deepEqual(copied.ascii(), history.concat(ids).ascii());
  assert.deepEqual(copied.toArray(), [5, 60, ...ids]);
  assert.equal(copied.length, 6);
  assert.equal(copied.last(), 4_294_967_295);
  const first = PromptIds.from(ids, written);
  assert.deepEqual(first.toArray(), ids);
  assert.deepEqual(first.concat([9]).toArray(), [...ids, 9]);
});

Deno.test("PromptIds: a sequence copied again and again (a turn resumed or retried each time) keeps a buffer of what it holds, not one doubled a copy", () => {
  let head = PromptIds.from(Array.from({ length: 2_000 }, (_, i) => i));
  for (let turn = 0; turn < 12; turn++) {
    head.concat([1]); // an attempt written in place, then given up
    head = head.concat([2, 3]); // the resumed attempt: a copy, since the buffer moved on
    assert.ok(
      head.bytes <= capacityFor(head.ascii().length + 1 + 2 * 11),
      `turn ${turn}: ${head.bytes} bytes for ${head.ascii().length} digits`,
    );
  }
  assert.deepEqual(head.toArray(), [
    ...Array.from({ length: 2_000 }, (_, i) => i),
    ...Array.from({ length: 12 }, () => [2, 3]).flat(),
  ]);
});

Deno.test("PromptIds: a sequence extended in place a token at a time holds at most half as much again as its digits (and few copies)", () => {
  let ids = PromptIds.from([7]);
  const buffers = new Set<number>();
  for (let i = 0; i < 50_000; i++) {
    ids = ids.concat([151_643]);
    buffers.add(ids.bytes);
  }
  const digits = ids.ascii().length;
  assert.ok(ids.bytes <= capacityFor(digits + 12), `${ids.bytes} bytes for ${digits} digits`);
  assert.ok(buffers.size <= 20, `${buffers.size} buffers`);
});

Deno.test("PromptIds.from() of ids holds a buffer of half as much again as their digits, not of a bound per id", () => {
  const ids = Array.from({ length: 60_000 }, (_, i) => (i * 7_919) % 151_000);
  const prompt = PromptIds.from(ids);
  assert.equal(prompt.bytes, capacityFor(prompt.ascii().length + 1));
  assert.deepEqual(prompt.toArray(), ids);
});
