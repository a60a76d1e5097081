/**
 * Paths a patch may not change: after the patch is applied, the task's protected paths (its
 * tests) and the paths of its `test_patch` are put back as they are at the base commit, so an
 * agent cannot pass by editing the tests. What the patch had changed among them is reported.
 *
 * @module
 */
import { shellQuote } from "./task.ts";

/**
 * A shell script, run in the work tree, that lists the changes under `paths` (`git status
 * --porcelain`), then restores each path from HEAD — the base commit, since a patch is applied
 * and never committed — or removes it when the base commit does not have it.
 *
 * @example
 * ```ts
 * restoreScript(["tests"]); // "git status --porcelain … -- tests\nfor p in tests; do …"
 * ```
 */
export function restoreScript(paths: readonly string[]): string {
  const quoted = paths.map(shellQuote).join(" ");
  return [
    `git status --porcelain --untracked-files=all -- ${quoted} || exit 1`,
    `for p in ${quoted}; do`,
    `  if git cat-file -e "HEAD:$p" 2>/dev/null; then`,
    `    git restore --source=HEAD --worktree -- "$p" || exit 1`,
    `  else`,
    `    rm -rf -- "$p"`,
    `  fi`,
    `done`,
    `git clean -fdq -- ${quoted}`,
  ].join("\n");
}

/**
 * The paths `git status --porcelain` lists in `output` (both sides of a rename), in order.
 *
 * @example
 * ```ts
 * tamperedPaths(" M tests/test_calc.py\n?? tests/new.py\n"); // ["tests/test_calc.py", "tests/new.py"]
 * ```
 */
export function tamperedPaths(output: string): string[] {
  const paths: string[] = [];
  for (const line of output.split("\n")) {
    const match = line.match(/^[ MADRCUT?!]{2} (.+)$/);
    if (!match) continue;
    for (const path of match[1].split(" -> ")) {
      const plain = path.startsWith('"') ? JSON.parse(path) as string : path;
      if (!paths.includes(plain)) paths.push(plain);
    }
  }
  return paths;
}
