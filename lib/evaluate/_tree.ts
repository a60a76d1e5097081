/**
 * The files of a folder of a task folder, walked with their number, sizes and depth bounded and
 * no symbolic link leading out of the task folder.
 *
 * @module
 */

/** A file found under a folder. */
export interface TreeFile {
  /** Its path under the folder walked, `/`-separated. */
  readonly path: string;
  /** Its real path on the host (a link's target). */
  readonly host: string;
  readonly size: number;
  /** Whether its owner may execute it. */
  readonly executable: boolean;
}

/** Bounds of one walk. */
export interface TreeLimits {
  readonly files: number;
  /** Bytes of all files. */
  readonly bytes: number;
  /** Bytes of one file. */
  readonly fileBytes: number;
  /** A missing folder is empty rather than an error. */
  readonly optional?: boolean;
}

/** Deepest folder nesting walked. */
export const MAX_TREE_DEPTH = 32;
/** Most folders walked under one folder: empty ones cost a walk too. */
export const MAX_TREE_FOLDERS = 10_000;

/** A folder that breaks a bound, or holds a link out of the task folder. */
export class TreeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TreeError";
  }
}

/**
 * Every file under `root/sub` (links followed while they stay inside `root`), sorted by path;
 * `.git` folders are skipped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readTree } from "./_tree.ts";
 * const dir = new URL("../../fixtures/harbor/fizzbuzz", import.meta.url).pathname;
 * const files = await readTree(dir, "tests", { files: 10, bytes: 1e6, fileBytes: 1e6 });
 * assert.deepEqual(files.map((file) => file.path).sort(), ["test.sh", "test_outputs.py"]);
 * ```
 * @throws {TreeError} naming the file or folder at fault.
 */
export async function readTree(root: string, sub: string, limits: TreeLimits): Promise<TreeFile[]> {
  const top = `${root}/${sub}`;
  let real: string;
  try {
    real = await Deno.realPath(top);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    if (limits.optional) return [];
    throw new TreeError(`${root} has no ${sub}/ folder`);
  }
  if (!real.startsWith(`${root}/`)) {
    throw new TreeError(`${top} is a symbolic link out of the task folder`);
  }
  if (!(await Deno.stat(real)).isDirectory) throw new TreeError(`${top} is not a folder`);
  const files: TreeFile[] = [];
  let bytes = 0;
  let folders = 0;
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    if (depth > MAX_TREE_DEPTH) {
      throw new TreeError(`${top}/${prefix} is nested deeper than ${MAX_TREE_DEPTH} folders`);
    }
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name === ".git") continue;
      const path = `${prefix}${entry.name}`;
      const shown = `${top}/${path}`;
      let host = `${dir}/${entry.name}`;
      if (entry.isSymlink) {
        try {
          host = await Deno.realPath(host);
        } catch {
          throw new TreeError(`${shown} is a symbolic link to nothing`);
        }
        if (!host.startsWith(`${root}/`)) {
          throw new TreeError(`${shown} is a symbolic link out of the task folder`);
        }
      }
      const info = await Deno.stat(host);
      if (info.isDirectory) {
        if (entry.isSymlink) throw new TreeError(`${shown} is a symbolic link to a folder`);
        if (++folders > MAX_TREE_FOLDERS) {
          throw new TreeError(`${top}/ has more than ${MAX_TREE_FOLDERS} folders`);
        }
        await walk(host, `${path}/`, depth + 1);
        continue;
      }
      if (!info.isFile) throw new TreeError(`${shown} is neither a file nor a folder`);
      if (files.length >= limits.files) {
        throw new TreeError(`${top}/ has more than ${limits.files} files`);
      }
      if (info.size > limits.fileBytes) {
        throw new TreeError(`${shown} has ${info.size} bytes, at most ${limits.fileBytes}`);
      }
      bytes += info.size;
      if (bytes > limits.bytes) {
        throw new TreeError(`${top}/ has more than ${limits.bytes} bytes of files`);
      }
      files.push({ path, host, size: info.size, executable: ((info.mode ?? 0) & 0o100) !== 0 });
    }
  };
  await walk(real, "", 0);
  return files.sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}
