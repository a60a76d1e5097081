/**
 * What the replay tests of recorded CLI episodes share: reading a fixture with its repository path
 * put back, and checking that every field and header the CLI sent is one the protocol's
 * request-fields table accounts for.
 *
 * @module
 */
import assert from "node:assert/strict";
import { fieldPaths } from "../lib/anthropic/mod.ts";

/** The recorded episode in `file`, `{{REPO}}` replaced by `repo`. */
export async function readRecorded<Episode>(file: URL, repo: string): Promise<Episode> {
  return JSON.parse((await Deno.readTextFile(file)).replaceAll("{{REPO}}", repo)) as Episode;
}

/**
 * Asserts `unaccounted` (a protocol's request-fields check) finds nothing in `requests`, whose
 * values under `opaque` keys (tool arguments and schemas) are not entered, and that it does
 * report a field and a header it has never seen.
 */
export function assertFieldsAccounted(
  requests: readonly { path: string; headers: Record<string, string>; body: unknown }[],
  unaccounted: (paths: Iterable<string>, headers: Iterable<string>) => string[],
  opaque?: readonly string[],
): void {
  for (const request of requests) {
    const missing = unaccounted(fieldPaths(request.body, opaque), Object.keys(request.headers));
    assert.deepEqual(missing, [], `${(request.body as { model?: string }).model} ${request.path}`);
  }
  assert.deepEqual(unaccounted(fieldPaths({ model: "m", surprise: { deep: 1 } }), ["x-new"]), [
    "surprise",
    "surprise.deep",
    "header x-new",
  ]);
}
