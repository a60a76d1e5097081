/**
 * Paths a patch may not change: after the patch is applied, the task's protected paths (its
 * tests) and the paths of its `test_patch` are put back exactly as they are at the base commit,
 * so an agent cannot pass by editing the tests. What the patch had changed among them is reported.
 *
 * "Exactly" holds whatever git is told to overlook or convert. Every file under a protected path
 * that is not the base's is listed — untracked ones and ignored ones alike, so a `.gitignore`
 * that hides a module shadowing a test does not hide it from the guard — and the paths are
 * removed whole and checked out again from HEAD (the base commit: a patch is applied, never
 * committed). A `.gitattributes` the patch added or changed could make that checkout write other
 * bytes than the base's (`eol`, `working-tree-encoding`), so when there is one, every restored
 * file is hashed as it is on disk and rewritten from its blob where it differs.
 *
 * @module
 */
import type { ExecResult } from "../sandbox/mod.ts";
import { unquoteGitPath } from "./patch_paths.ts";
import { shellQuote } from "../shell/mod.ts";

/** Runs a shell command in the work tree, its stderr in its stdout. */
export type RunInTree = (command: string) => Promise<ExecResult>;

/** What putting the protected paths back found, or the command that could not finish. */
export type Restoration =
  | { readonly tampered: string[] }
  | { readonly failed: ExecResult; readonly step: string };

/** Separates the protected paths' status from the attribute files' in the restore's output. */
const ATTRIBUTES_MARK = "--- changed .gitattributes ---";
/** Paths given to one `git hash-object`, to stay far below the argument-size limit. */
const HASH_BATCH = 500;

/**
 * Puts `paths` back as at HEAD and lists what the patch had changed under them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LocalBackend } from "../sandbox/mod.ts";
 * import { fixtureRepo } from "./fixture_repos.ts";
 * import { restoreProtected } from "./protect.ts";
 * const root = await Deno.makeTempDir();
 * const backend = new LocalBackend({ root });
 * const repo = { kind: "path" as const, path: await fixtureRepo("python_unittest", root) };
 * const sandbox = await backend.create({
 *   repo,
 *   commit: "1bdf00de",
 *   network: false,
 *   lifetimeMs: 60_000,
 * });
 * const run = (script: string) => sandbox.exec(script, { timeoutMs: 10_000 });
 * await run("echo 'assert True' > tests/test_calc.py"); // the agent rewrote a test
 * const restored = await restoreProtected(run, ["tests"]);
 * assert.deepEqual("tampered" in restored && restored.tampered, ["tests/test_calc.py"]);
 * await backend.close();
 * await Deno.remove(root, { recursive: true });
 * ```
 */
export async function restoreProtected(
  run: RunInTree,
  paths: readonly string[],
): Promise<Restoration> {
  const restored = await run(restoreScript(paths));
  if (restored.timedOut || restored.exitCode !== 0) return { failed: restored, step: "restore" };
  const [status, attributes = ""] = restored.stdout.split(ATTRIBUTES_MARK);
  const tampered = tamperedPaths(status);
  if (tamperedPaths(attributes).length === 0) return { tampered };

  // Attributes may have changed what the checkout wrote: compare the bytes with the blobs.
  const listed = await run(
    `git --literal-pathspecs ls-tree -r -z HEAD -- ${paths.map(shellQuote).join(" ")}`,
  );
  if (listed.timedOut || listed.exitCode !== 0) return { failed: listed, step: "list" };
  const files = treeFiles(listed.stdout);
  if (files.length === 0) return { tampered };
  const hashed = await run(hashScript(files.map((file) => file.path)));
  if (hashed.timedOut || hashed.exitCode !== 0) return { failed: hashed, step: "verify" };
  const onDisk = hashed.stdout.split("\n").filter((line) => /^[0-9a-f]{40,64}$/.test(line));
  const differ = files.filter((file, i) => onDisk[i] !== file.sha);
  if (differ.length === 0) return { tampered };
  const rewritten = await run(rewriteScript(differ));
  if (rewritten.timedOut || rewritten.exitCode !== 0) return { failed: rewritten, step: "rewrite" };
  return { tampered: [...new Set([...tampered, ...differ.map((file) => file.path)])] };
}

/**
 * A shell script, run in the work tree, that lists every change under `paths` — untracked and
 * ignored files included — then, after a marker, the `.gitattributes` files the patch changed
 * anywhere, then removes each path and checks it out again from HEAD when HEAD has it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { restoreScript } from "./protect.ts";
 * assert.ok(restoreScript(["tests"]).startsWith("git --literal-pathspecs status --porcelain"));
 * ```
 */
export function restoreScript(paths: readonly string[]): string {
  const quoted = paths.map(shellQuote).join(" ");
  const status = "status --porcelain --untracked-files=all --ignored=traditional";
  // Protected paths are names, not patterns: `tests/[ab].py` is that one file.
  return [
    `git --literal-pathspecs ${status} -- ${quoted} || exit 1`,
    `echo ${shellQuote(ATTRIBUTES_MARK)}`,
    `git ${status} -- ':(glob)**/.gitattributes' || exit 1`,
    `for p in ${quoted}; do`,
    `  rm -rf -- "$p" || exit 1`,
    `  if git cat-file -e "HEAD:$p" 2>/dev/null; then`,
    `    git --literal-pathspecs checkout --quiet HEAD -- "$p" || exit 1`,
    `  fi`,
    `done`,
  ].join("\n");
}

/** A regular file of the base commit's tree. */
export interface TreeFile {
  readonly mode: string;
  readonly sha: string;
  readonly path: string;
}

/** The regular files in `git ls-tree -r -z` output (symlinks and submodules left out). */
export function treeFiles(output: string): TreeFile[] {
  const files: TreeFile[] = [];
  for (const entry of output.split("\0")) {
    const match = entry.match(/^(100644|100755) blob ([0-9a-f]+)\t([\s\S]+)$/);
    if (match) files.push({ mode: match[1], sha: match[2], path: match[3] });
  }
  return files;
}

/** A script printing, one per line and in order, the object id of each file's bytes on disk. */
export function hashScript(paths: readonly string[]): string {
  const lines: string[] = [];
  for (let i = 0; i < paths.length; i += HASH_BATCH) {
    const batch = paths.slice(i, i + HASH_BATCH).map(shellQuote).join(" ");
    lines.push(`git hash-object --no-filters -- ${batch} || exit 1`);
  }
  return lines.join("\n");
}

/** A script writing each file's blob as it is, with its mode. */
export function rewriteScript(files: readonly TreeFile[]): string {
  return files.map((file) => {
    const path = shellQuote(file.path);
    const mode = file.mode === "100755" ? "755" : "644";
    return `git cat-file blob ${file.sha} > ${path} && chmod ${mode} ${path} || exit 1`;
  }).join("\n");
}

/**
 * The paths `git status --porcelain` lists in `output` (both sides of a rename), in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tamperedPaths } from "./protect.ts";
 * assert.deepEqual(tamperedPaths(" M tests/test_calc.py\n?? tests/new.py\n!! tests/x/y.py\n"), [
 *   "tests/test_calc.py",
 *   "tests/new.py",
 *   "tests/x/y.py",
 * ]);
 * ```
 */
export function tamperedPaths(output: string): string[] {
  const paths: string[] = [];
  for (const line of output.split("\n")) {
    const match = line.match(/^[ MADRCUT?!]{2} (.+)$/);
    if (!match) continue;
    for (const path of match[1].split(" -> ")) {
      const plain = unquoteGitPath(path);
      if (!paths.includes(plain)) paths.push(plain);
    }
  }
  return paths;
}
