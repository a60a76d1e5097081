/**
 * The runnable snippets of the README and docs/: every fenced `sh`, `bash` and `python` block, named
 * by its file, heading and line, with what the comment line before it says of it, and the output
 * shown after it. The conventions, for whoever writes a page:
 *
 * - A snippet runs as written, from the repository's folder, against a gateway the runner serves
 *   on `127.0.0.1:8080` with `ADMIN_TOKEN` set (its value in the environment).
 * - `<!-- not run: <why> -->` on the line before the fence: a snippet that cannot run here (a GPU
 *   engine, a cloud, another host); the reason is printed.
 * - `<!-- expect: error -->`: a snippet that shows an error on purpose (its output may hold the
 *   gateway's error envelope; any other snippet whose output does fails).
 * - `<!-- output -->` before a fence that follows a snippet: its output, compared line by line; a
 *   `…` within a line matches any text, a line that is only `…` any number of lines.
 * - `<!-- output: shape -->`: its output is JSON of this shape (the same keys at every level, the
 *   same types; `"…"` any string, an object with a `"…"` key may have more keys, an array's first
 *   element the shape of every element). For answers with ids, times and counts.
 *
 * @module
 */

/** How a snippet's output is checked. */
export type OutputCheck = { readonly kind: "lines" | "shape"; readonly text: string };

/** One snippet. */
export interface Snippet {
  /** The page, from the repository's root. */
  readonly file: string;
  /** The heading it sits under. */
  readonly heading: string;
  /** Its fence's line, 1-based. */
  readonly line: number;
  readonly lang: "sh" | "python";
  readonly body: string;
  /** Why it does not run here; `null` when it runs. */
  readonly skip: string | null;
  /** It shows an error on purpose. */
  readonly expectError: boolean;
  /** The output the page shows for it, and how to compare; `null`: not checked. */
  readonly output: OutputCheck | null;
}

const RUNNABLE: Record<string, Snippet["lang"]> = {
  sh: "sh",
  bash: "sh",
  shell: "sh",
  python: "python",
};

/** The snippets of `markdown` (the page `file`), in order. */
export function snippets(file: string, markdown: string): Snippet[] {
  const lines = markdown.split("\n");
  const found: Snippet[] = [];
  let heading = "(top)";
  let last: { snippet: Snippet; end: number } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, "");
    const fence = line.match(/^```(\w*)\s*$/);
    if (!fence) continue;
    const end = lines.findIndex((next, j) => j > i && /^```\s*$/.test(next));
    if (end < 0) throw new Error(`${file}:${i + 1}: a fence that does not close`);
    const marker = markerBefore(lines, i);
    const body = lines.slice(i + 1, end).join("\n");
    if (marker?.startsWith("output") && last !== null) {
      const kind = marker === "output: shape" ? "shape" : "lines";
      const index = found.indexOf(last.snippet);
      found[index] = { ...last.snippet, output: { kind, text: body } };
      last = null;
    } else if (RUNNABLE[fence[1]] !== undefined) {
      const snippet: Snippet = {
        file,
        heading,
        line: i + 1,
        lang: RUNNABLE[fence[1]],
        body,
        skip: marker?.startsWith("not run:") ? marker.slice("not run:".length).trim() : null,
        expectError: marker === "expect: error",
        output: null,
      };
      found.push(snippet);
      last = { snippet, end };
    }
    i = end;
  }
  return found;
}

/** The `<!-- … -->` comment on the line before line `index` (blank lines between are allowed). */
function markerBefore(lines: readonly string[], index: number): string | null {
  let j = index - 1;
  while (j >= 0 && lines[j].trim() === "") j--;
  const match = j >= 0 ? lines[j].match(/^<!--\s*(.*?)\s*-->$/) : null;
  return match ? match[1] : null;
}

/**
 * Why `actual` is not the output `shown` says, or `null` when it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outputProblem } from "./_snippets.ts";
 * assert.equal(outputProblem("a 1\nb\nc\n", { kind: "lines", text: "a …\n…" }), null);
 * assert.equal(outputProblem('{"a": 1, "b": "x"}', { kind: "shape", text: '{"a": 2, "b": "…"}' }), null);
 * assert.match(outputProblem('{"a": 1}', { kind: "shape", text: '{"a": 1, "b": 2}' })!, /b/);
 * ```
 */
export function outputProblem(actual: string, shown: OutputCheck): string | null {
  return shown.kind === "lines"
    ? linesProblem(actual, shown.text)
    : shapeProblem(actual, shown.text);
}

function linesProblem(actual: string, shown: string): string | null {
  const want = shown.split("\n");
  const got = actual.replace(/\n$/, "").split("\n");
  const match = (w: number, g: number): boolean => {
    if (w === want.length) return g === got.length;
    if (want[w].trim() === "…") {
      for (let k = g; k <= got.length; k++) if (match(w + 1, k)) return true;
      return false;
    }
    if (g === got.length) return false;
    const pattern = new RegExp(
      `^${
        want[w].split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")
      }$`,
    );
    return pattern.test(got[g]) && match(w + 1, g + 1);
  };
  return match(0, 0)
    ? null
    : `the output differs from the page's:\n--- shown\n${shown}\n--- got\n${actual}`;
}

function shapeProblem(actual: string, shown: string): string | null {
  let got: unknown;
  let want: unknown;
  try {
    want = JSON.parse(shown);
  } catch (error) {
    return `the page's output is not JSON: ${(error as Error).message}`;
  }
  try {
    got = JSON.parse(actual);
  } catch {
    return `the output is not JSON: ${actual.slice(0, 500)}`;
  }
  return sameShape(got, want, "$");
}

function sameShape(got: unknown, want: unknown, at: string): string | null {
  if (want === "…") return typeof got === "string" ? null : `${at}: expected a string`;
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) return `${at}: expected an array`;
    if (want.length === 0) return null;
    for (const [i, item] of got.entries()) {
      const problem = sameShape(item, want[0], `${at}[${i}]`);
      if (problem) return problem;
    }
    return null;
  }
  if (want !== null && typeof want === "object") {
    if (got === null || typeof got !== "object" || Array.isArray(got)) {
      return `${at}: expected an object`;
    }
    const wanted = Object.keys(want).filter((key) => key !== "…");
    const open = Object.hasOwn(want, "…");
    const missing = wanted.filter((key) => !Object.hasOwn(got, key));
    if (missing.length > 0) return `${at}: the answer has no ${missing.join(", ")}`;
    const extra = Object.keys(got).filter((key) => !Object.hasOwn(want, key));
    if (!open && extra.length > 0) return `${at}: the page does not show ${extra.join(", ")}`;
    for (const key of wanted) {
      const problem = sameShape(
        (got as Record<string, unknown>)[key],
        (want as Record<string, unknown>)[key],
        `${at}.${key}`,
      );
      if (problem) return problem;
    }
    return null;
  }
  // null stands for "null or a value of any type", shown where the page has no example value.
  if (want === null) return null;
  return typeof got === typeof want
    ? null
    : `${at}: expected a ${typeof want}, got ${JSON.stringify(got)}`;
}
