import assert from "node:assert/strict";
import {
  decodeNpyRoutes,
  decodeSglangRoutes,
  expertDtype,
  nestedRoutes,
  readNpy,
  RoutesFormatError,
  toBase64,
  writeNpy,
} from "../../lib/engine/mod.ts";

const SHAPE = { layers: 2, topK: 2, experts: 300 };

Deno.test("expertDtype() is the smallest unsigned type of the model's expert ids", () => {
  assert.equal(expertDtype({ experts: 256 }), "uint8");
  assert.equal(expertDtype({ experts: 257 }), "uint16");
  assert.equal(expertDtype({ experts: 65_536 }), "uint16");
  assert.equal(expertDtype({ experts: 65_537 }), "int32");
});

Deno.test("decodeSglangRoutes() reads base64 int32 rows from their start, in the kept type", () => {
  const ids = new Int32Array([1, 2, 3, 299, 0, 0, 7, 8]);
  const rows = decodeSglangRoutes(toBase64(new Uint8Array(ids.buffer)), SHAPE, 10, "uint16");
  assert.equal(rows.start, 10);
  assert.equal(rows.rows, 2);
  assert.ok(rows.values instanceof Uint16Array);
  assert.deepEqual(Array.from(rows.values), Array.from(ids));
  assert.throws(
    () => decodeSglangRoutes(toBase64(new Uint8Array(12)), SHAPE, 0, "uint16"),
    (e) => e instanceof RoutesFormatError && /not whole rows of 4 int32/.test(e.message),
  );
  const far = new Int32Array([1, 2, 3, 300]);
  assert.throws(
    () => decodeSglangRoutes(toBase64(new Uint8Array(far.buffer)), SHAPE, 0, "uint16"),
    (e) =>
      e instanceof RoutesFormatError && /expert 300 at value 3; the model has 300/.test(e.message),
  );
  assert.throws(() => decodeSglangRoutes("not base64!", SHAPE, 0, "uint16"), RoutesFormatError);
});

Deno.test("a .npy written is read back whole in each type, and checked against the model's shape", () => {
  for (
    const values of [
      new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]),
      new Uint16Array([1, 2, 3, 4, 5, 6, 7, 299]),
      new Int32Array([1, 2, 3, 4, 5, 6, 7, 8]),
    ]
  ) {
    const file = writeNpy(values, [2, 2, 2]);
    assert.equal((file.length - values.byteLength) % 64, 0, "the header is padded to 64 bytes");
    const back = readNpy(file);
    assert.deepEqual(back.shape, [2, 2, 2]);
    assert.deepEqual(Array.from(back.values), Array.from(values));
    const rows = decodeNpyRoutes(file, SHAPE, 0, "uint16");
    assert.deepEqual(Array.from(rows.values), Array.from(values));
  }
  assert.throws(
    () => decodeNpyRoutes(writeNpy(new Uint8Array(6), [1, 2, 3]), SHAPE, 0, "uint8"),
    (e) =>
      e instanceof RoutesFormatError && /shape \(1, 2, 3\), not \(rows, 2, 2\)/.test(e.message),
  );
  const fortran = writeNpy(new Uint8Array(8), [2, 2, 2]);
  const text = new TextDecoder().decode(fortran).replace("False", "True ");
  assert.throws(() => readNpy(new TextEncoder().encode(text)), RoutesFormatError);
  assert.throws(() => readNpy(new Uint8Array([1, 2, 3])), /not a \.npy file/);
  assert.throws(() => readNpy(fortran.subarray(0, fortran.length - 1)), /data is 7 bytes, not 8/);
});

Deno.test("nestedRoutes() reads older vLLM's nested rows, refusing another shape", () => {
  const rows = nestedRoutes([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], SHAPE);
  assert.deepEqual({ start: rows.start, rows: rows.rows }, { start: 0, rows: 2 });
  assert.deepEqual(Array.from(rows.values), [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.throws(() => nestedRoutes([[[1, 2]]], SHAPE), /does not have 2 layers/);
  assert.throws(() => nestedRoutes([[[1], [2]]], SHAPE), /does not have 2 experts/);
  assert.throws(() => nestedRoutes([[[1, "x"], [2, 3]]], SHAPE), /expert -1/);
});
