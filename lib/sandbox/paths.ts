/**
 * Paths inside a local sandbox mapped to its host folders, so that no path — not `..`, not a
 * symbolic link planted by a sandboxed process — reads or writes outside them.
 *
 * @module
 */

/** A sandbox folder: where it appears inside and where it lives on the host. */
export interface Mount {
  readonly inside: string;
  readonly host: string;
}

/**
 * The host path of `path` (absolute, inside the sandbox), following symbolic links only while
 * they stay within the folder they start in; with `create`, missing parent folders are made.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveInside } from "./paths.ts";
 * const host = await Deno.makeTempDir();
 * const path = await resolveInside("/tmp/a.txt", [{ inside: "/tmp", host }], { create: true });
 * assert.equal(path, `${host}/a.txt`);
 * await Deno.remove(host, { recursive: true });
 * ```
 * @throws {RangeError} for a relative path, a path outside every mount, or one that escapes.
 */
export async function resolveInside(
  path: string,
  mounts: readonly Mount[],
  options: { readonly create: boolean },
): Promise<string> {
  if (!path.startsWith("/")) throw new RangeError(`Sandbox path "${path}" is not absolute`);
  const normal = normalize(path);
  const mount = mounts
    .filter((m) => normal === m.inside || normal.startsWith(`${m.inside}/`))
    .sort((a, b) => b.inside.length - a.inside.length)[0];
  if (!mount) {
    const allowed = mounts.map((m) => m.inside).join(", ");
    throw new RangeError(`Sandbox path "${path}" is outside the sandbox's folders (${allowed})`);
  }
  const parts = normal.slice(mount.inside.length).split("/").filter(Boolean);
  if (parts.length === 0) throw new RangeError(`Sandbox path "${path}" is a folder`);
  const base = await Deno.realPath(mount.host);
  const within = (p: string) => p === base || p.startsWith(`${base}/`);
  let current = base;
  for (const part of parts.slice(0, -1)) {
    const next = `${current}/${part}`;
    let info: Deno.FileInfo | null = null;
    try {
      info = await Deno.lstat(next);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    if (info === null) {
      if (!options.create) throw new Deno.errors.NotFound(`No such file: ${path}`);
      await Deno.mkdir(next).catch((error) => {
        if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      });
      current = next;
    } else if (info.isSymlink) {
      current = await Deno.realPath(next);
      if (!within(current)) throw new RangeError(`Sandbox path "${path}" escapes its folder`);
    } else if (info.isDirectory) {
      current = next;
    } else {
      throw new RangeError(`Sandbox path "${path}": "${part}" is not a folder`);
    }
  }
  const target = `${current}/${parts[parts.length - 1]}`;
  try {
    if ((await Deno.lstat(target)).isSymlink) {
      const real = await Deno.realPath(target).catch(() => null);
      if (real === null || !within(real)) {
        throw new RangeError(`Sandbox path "${path}" escapes its folder`);
      }
      return real;
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return target;
}

/** `path` with `.`, `..` and repeated slashes resolved lexically (never above `/`). */
function normalize(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return `/${out.join("/")}`;
}
