/**
 * The paths a unified diff touches, and the check that all of them stay inside the repository:
 * no absolute path, no `..`, nothing under `.git`. Checked before the patch reaches `git apply`,
 * so a patch that reaches out is refused with a reason of our own, on every backend.
 *
 * @module
 */

/** A patch that touches a path outside the repository. */
export class PatchPathError extends Error {
  constructor(readonly path: string, why: string) {
    super(`Patch touches "${path}", ${why}`);
    this.name = "PatchPathError";
  }
}

/**
 * Every path named by the headers of `patch`, as `git apply -p1` reads them (the first
 * component, `a/` or `b/`, stripped), `/dev/null` left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { patchPaths } from "./patch_paths.ts";
 * const patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n";
 * assert.deepEqual(patchPaths(patch), ["x.py"]);
 * ```
 */
export function patchPaths(patch: string): string[] {
  const paths = new Set<string>();
  for (const line of patch.split("\n")) {
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    let match = text.match(/^diff --git (.+)$/);
    if (match) {
      for (const path of splitGitHeader(match[1])) paths.add(stripFirst(path));
      continue;
    }
    match = text.match(/^(?:---|\+\+\+) (.+?)(?:\t.*)?$/);
    if (match) {
      const path = unquoteGitPath(match[1]);
      if (path !== "/dev/null") paths.add(stripFirst(path));
      continue;
    }
    match = text.match(/^(?:rename|copy) (?:from|to) (.+)$/);
    if (match) paths.add(unquoteGitPath(match[1]));
  }
  return [...paths];
}

/**
 * Throws when any path of `patch` leaves the repository.
 *
 * @throws {PatchPathError} naming the first such path.
 */
export function checkPatchPaths(patch: string): void {
  for (const path of patchPaths(patch)) {
    if (path.includes("\0")) throw new PatchPathError(path, "a path with a NUL byte");
    if (path.startsWith("/")) {
      throw new PatchPathError(path, "an absolute path outside the repository");
    }
    const parts = path.split("/");
    if (parts.includes("..")) throw new PatchPathError(path, "outside the repository");
    if (parts[0] === ".git") throw new PatchPathError(path, "inside the repository's .git folder");
  }
}

/** `a/x b/y` → [`a/x`, `b/y`]; paths with spaces are split where `b/` begins, quoted ones read. */
function splitGitHeader(rest: string): string[] {
  if (rest.startsWith('"')) {
    const end = closingQuote(rest);
    return [unquoteGitPath(rest.slice(0, end + 1)), unquoteGitPath(rest.slice(end + 1).trim())];
  }
  const quoted = rest.indexOf(' "');
  if (quoted > 0) return [rest.slice(0, quoted), unquoteGitPath(rest.slice(quoted + 1))];
  const half = rest.indexOf(" b/");
  if (half > 0) return [rest.slice(0, half), rest.slice(half + 1)];
  const space = rest.indexOf(" ");
  return space > 0 ? [rest.slice(0, space), rest.slice(space + 1)] : [rest];
}

function closingQuote(text: string): number {
  for (let i = 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i;
  }
  return text.length - 1;
}

/**
 * Git's C-style quoted path (`"a/sp\303\251cial"`) as text; unquoted paths as they are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unquoteGitPath } from "./patch_paths.ts";
 * assert.equal(unquoteGitPath('"caf\\303\\251.py"'), "café.py");
 * ```
 */
export function unquoteGitPath(path: string): string {
  if (!(path.startsWith('"') && path.endsWith('"') && path.length >= 2)) return path;
  const bytes: number[] = [];
  const body = path.slice(1, -1);
  const escapes = new Map(Object.entries({ n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11 }));
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch !== "\\") {
      bytes.push(...new TextEncoder().encode(ch));
      continue;
    }
    const next = body[++i];
    if (next === undefined) {
      bytes.push(92); // a trailing backslash stays
    } else if (/[0-7]/.test(next)) {
      bytes.push(parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else {
      bytes.push(escapes.get(next) ?? next.charCodeAt(0));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** Drops the first path component, as `-p1` does (`a/src/x.py` → `src/x.py`). */
function stripFirst(path: string): string {
  const slash = path.indexOf("/");
  return slash >= 0 ? path.slice(slash + 1) : path;
}
