/**
 * Words for a POSIX shell: the one quoting every command line the gateway builds goes through
 * (the evaluation's commands, an agent's command, the rollout's install and diff steps).
 *
 * @module
 */

/**
 * `value` as one word of a POSIX shell: as it is when it holds only characters no shell treats
 * specially, else in single quotes (a `'` inside written `'\''`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shellQuote } from "./shell_quote.ts";
 * assert.equal(shellQuote("tests/test_a.py"), "tests/test_a.py");
 * assert.equal(shellQuote("it's"), "'it'\\''s'");
 * ```
 */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
