import assert from "node:assert/strict";
import { checkMetadata, jsonShapeProblem, LimitError } from "../../lib/limits/mod.ts";

const nest = (levels: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

Deno.test("jsonShapeProblem() accepts values at the depth bound and refuses one level more", () => {
  assert.equal(jsonShapeProblem(nest(4), 4), null);
  assert.deepEqual(jsonShapeProblem({ a: nest(4) }, 4), {
    path: "a.0.0.0",
    message: "nested deeper than 4 levels",
  });
});

Deno.test("jsonShapeProblem() finds a __proto__ key wherever it is, and only as a key", () => {
  assert.deepEqual(jsonShapeProblem(JSON.parse('{"a": [1, {"b": {"__proto__": {}}}]}')), {
    path: "a.1.b.__proto__",
    message: 'key "__proto__" is not allowed',
  });
  assert.equal(jsonShapeProblem({ a: "__proto__", constructor: { toString: 1 } }), null);
});

Deno.test("jsonShapeProblem() walks thousands of levels and long arrays without recursion", () => {
  const deep = JSON.parse("[".repeat(100_000) + "]".repeat(100_000));
  assert.match(jsonShapeProblem(deep)!.path, /^0\.0\.0\.0\.0\.0\.0\.0\.…\.0\.0$/);
  const long = Array.from({ length: 300_000 }, () => ({ x: 1 }));
  long.push(JSON.parse('{"__proto__": 1}'));
  assert.equal(jsonShapeProblem(long)!.path, "300000.__proto__");
});

Deno.test("checkMetadata() bounds the size and the key length, naming the field", () => {
  checkMetadata({ task: "t".repeat(1000) });
  assert.throws(
    () => checkMetadata({ blob: "x".repeat(20_000) }, "rollout.metadata"),
    (error) =>
      error instanceof LimitError && /^rollout\.metadata: \d+ bytes of JSON/.test(error.message),
  );
  assert.throws(() => checkMetadata({ ["k".repeat(257)]: 1 }), /has 257 characters, at most 256/);
});
