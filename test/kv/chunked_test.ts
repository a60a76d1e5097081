import assert from "node:assert/strict";
import {
  CHUNK_BYTES,
  decodeTurnTokens,
  encodeTurnTokens,
  type TurnTokens,
} from "../../lib/kv/chunked.ts";
import { KV_MAX_VALUE_BYTES } from "../../lib/kv/keys.ts";

/** A deterministic turn of `deltaLen + outputLen + closingLen` tokens. */
function turnOf(deltaLen: number, outputLen: number, closingLen: number): TurnTokens {
  return {
    delta: Array.from({ length: deltaLen }, (_, i) => (i * 7 + 3) % 151_669),
    output: Array.from({ length: outputLen }, (_, i) => (i * 13 + 5) % 151_669),
    logprobs: Array.from({ length: outputLen }, (_, i) => -((i % 997) + 1) / 1009),
    closing: Array.from({ length: closingLen }, () => 151_645),
  };
}

function plain(decoded: ReturnType<typeof decodeTurnTokens>) {
  return {
    delta: [...decoded.delta],
    output: [...decoded.output],
    logprobs: [...decoded.logprobs],
    closing: [...decoded.closing],
  };
}

Deno.test("encodeTurnTokens() and decodeTurnTokens() round-trip every part of a small turn", () => {
  const tokens = {
    delta: [151_644, 872, 198, 9707],
    output: [9707, 0, 4_294_967_295, 151_645],
    logprobs: [-1e-9, -0.123456789012345, 0, -42.5],
    closing: [151_645],
  };
  const chunks = encodeTurnTokens(tokens);
  assert.equal(chunks.length, 1);
  assert.deepEqual(plain(decodeTurnTokens(chunks)), tokens);
});

Deno.test("decodeTurnTokens() returns logprobs bit-exact as float64", () => {
  const logprobs = [-1e-9, -0.123456789012345, -Number.MIN_VALUE, -1.0000000000000002, -0];
  const decoded = decodeTurnTokens(
    encodeTurnTokens({ delta: [1], output: [2, 3, 4, 5, 6], logprobs, closing: [] }),
  );
  assert.ok(decoded.logprobs instanceof Float64Array);
  assert.deepEqual([...decoded.logprobs], logprobs);
  assert.ok(Object.is(decoded.logprobs[4], -0));
});

Deno.test("decodeTurnTokens() returns typed arrays that do not share the chunks' memory", () => {
  const chunks = encodeTurnTokens({ delta: [1, 2], output: [3], logprobs: [-0.5], closing: [4] });
  const decoded = decodeTurnTokens(chunks);
  assert.ok(decoded.delta instanceof Uint32Array);
  assert.ok(decoded.output instanceof Uint32Array);
  assert.ok(decoded.closing instanceof Uint32Array);
  chunks[0].fill(0);
  assert.deepEqual(plain(decoded), { delta: [1, 2], output: [3], logprobs: [-0.5], closing: [4] });
});

Deno.test("encodeTurnTokens() encodes an empty turn as a header only", () => {
  const chunks = encodeTurnTokens({ delta: [], output: [], logprobs: [], closing: [] });
  assert.equal(chunks.length, 1);
  assert.equal(chunks[0].length, 16);
  assert.deepEqual(plain(decodeTurnTokens(chunks)), {
    delta: [],
    output: [],
    logprobs: [],
    closing: [],
  });
});

Deno.test("encodeTurnTokens() aligns logprobs for every id count parity", () => {
  for (const deltaLen of [0, 1, 2, 3]) {
    const tokens = turnOf(deltaLen, 3, 1);
    const chunks = encodeTurnTokens(tokens);
    const bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    const ids = deltaLen + 3 + 1;
    assert.equal(bytes, Math.ceil((12 + ids * 4) / 8) * 8 + 3 * 8, `deltaLen ${deltaLen}`);
    assert.deepEqual(plain(decodeTurnTokens(chunks)), tokens);
  }
});

Deno.test("encodeTurnTokens() keeps every chunk at most CHUNK_BYTES and below KV's value limit", () => {
  assert.ok(CHUNK_BYTES < 65_536);
  assert.ok(CHUNK_BYTES < KV_MAX_VALUE_BYTES);
  const chunks = encodeTurnTokens(turnOf(50_000, 20_000, 1));
  assert.ok(chunks.length > 1);
  for (const chunk of chunks) {
    assert.ok(chunk.length <= CHUNK_BYTES, `chunk of ${chunk.length} bytes`);
  }
  for (const chunk of chunks.slice(0, -1)) assert.equal(chunk.length, CHUNK_BYTES);
});

Deno.test("encodeTurnTokens() and decodeTurnTokens() round-trip a 200k-token turn", () => {
  const tokens = turnOf(150_000, 50_000, 1);
  const chunks = encodeTurnTokens(tokens);
  const bytes = 16 + 200_001 * 4 + 50_000 * 8;
  assert.equal(chunks.length, Math.ceil(bytes / CHUNK_BYTES));
  for (const chunk of chunks) assert.ok(chunk.length <= CHUNK_BYTES);
  const decoded = decodeTurnTokens(chunks);
  assert.deepEqual([...decoded.delta], tokens.delta);
  assert.deepEqual([...decoded.output], tokens.output);
  assert.deepEqual([...decoded.logprobs], tokens.logprobs);
  assert.deepEqual([...decoded.closing], tokens.closing);
});

Deno.test("encodeTurnTokens() accepts typed arrays as input", () => {
  const tokens = {
    delta: new Uint32Array([5, 6, 7]),
    output: new Uint32Array([8]),
    logprobs: new Float64Array([-0.25]),
    closing: new Uint32Array([]),
  };
  assert.deepEqual(plain(decodeTurnTokens(encodeTurnTokens(tokens))), {
    delta: [5, 6, 7],
    output: [8],
    logprobs: [-0.25],
    closing: [],
  });
});

Deno.test("encodeTurnTokens() throws a RangeError when output and logprobs differ in length", () => {
  assert.throws(
    () => encodeTurnTokens({ delta: [1], output: [2, 3], logprobs: [-0.1], closing: [] }),
    (error: unknown) =>
      error instanceof RangeError && /2 output tokens but 1 logprobs/.test(error.message),
  );
  assert.throws(
    () => encodeTurnTokens({ delta: [], output: [], logprobs: [-0.1], closing: [] }),
    RangeError,
  );
});

Deno.test("decodeTurnTokens() throws a RangeError on a blob shorter than its header", () => {
  assert.throws(() => decodeTurnTokens([]), RangeError);
  assert.throws(() => decodeTurnTokens([new Uint8Array(11)]), /shorter than its header/);
});

Deno.test("decodeTurnTokens() throws a RangeError on a truncated blob", () => {
  const chunks = encodeTurnTokens(turnOf(40_000, 10_000, 1));
  assert.ok(chunks.length >= 3);
  assert.throws(() => decodeTurnTokens(chunks.slice(0, -1)), RangeError);
  const last = chunks.at(-1)!;
  assert.throws(
    () => decodeTurnTokens([...chunks.slice(0, -1), last.subarray(0, last.length - 8)]),
    /header says/,
  );
});

Deno.test("decodeTurnTokens() throws a RangeError on a blob with extra bytes", () => {
  const [chunk] = encodeTurnTokens({ delta: [1], output: [2], logprobs: [-1], closing: [] });
  assert.throws(() => decodeTurnTokens([chunk, new Uint8Array(8)]), RangeError);
});
