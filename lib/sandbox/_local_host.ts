/**
 * What the local backend does on the host itself: reading the host's root, killing a sandbox's
 * process tree, and finding (and clearing) the folders of owners that crashed.
 *
 * @module
 */
import { childPids, hostProcesses, processAlive } from "./host_processes.ts";
import type { HostRoot } from "./bwrap_args.ts";

/** What a sandbox folder records of its owner, so a crashed owner's folders can be removed. */
interface Owner {
  readonly host: string;
  readonly pid: number;
}

const OWNER_FILE = "owner.json";

/** Records this process as the owner of sandbox folder `dir`. */
export async function writeOwner(dir: string): Promise<void> {
  const owner: Owner = { host: Deno.hostname(), pid: Deno.pid };
  await Deno.writeTextFile(`${dir}/${OWNER_FILE}`, JSON.stringify(owner));
}

/**
 * Kills a sandboxed command with every process it started.
 *
 * bwrap's child is PID 1 of the sandbox's PID namespace: killed, the kernel kills the rest of the
 * namespace and lets PID 1 finish exiting only once they are all gone, so bwrap exits (and
 * `child.status` resolves) after them. Killing bwrap instead would resolve while the namespace
 * is still being torn down; and while bwrap is still setting the sandbox up, its PID 1 does not
 * yet die with it, and would live on for ever, holding the output pipes open.
 *
 * Before bwrap has that child, its process group (bwrap runs detached) is killed: bwrap, and a
 * PID 1 cloned meanwhile, which stays in the group (no --new-session).
 */
export function killTree(child: Deno.ChildProcess): void {
  killBwrap(child.pid);
}

/** {@linkcode killTree} by bwrap's pid. */
function killBwrap(pid: number): void {
  const inits = childPids(pid); // none once bwrap has exited
  for (const target of inits.length > 0 ? inits : [-pid]) {
    try {
      Deno.kill(target, "SIGKILL");
    } catch { /* already exited */ }
  }
}

/** The host's top-level entries with their symbolic links. */
export async function readHostRoots(): Promise<HostRoot[]> {
  const roots: HostRoot[] = [];
  for await (const entry of Deno.readDir("/")) {
    const symlink = entry.isSymlink ? await Deno.readLink(`/${entry.name}`) : null;
    roots.push({ name: entry.name, symlink });
  }
  return roots.sort((a, b) => a.name.localeCompare(b.name));
}

/** The folders of `paths` that exist and are visible inside (not under `/tmp`, `/run`, …). */
export async function existingFolders(paths: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const path of paths) {
    if (!path.startsWith("/") || /^\/(tmp|run|proc|dev|sys)(\/|$)/.test(path)) continue;
    try {
      if ((await Deno.stat(path)).isDirectory) found.push(await Deno.realPath(path));
    } catch { /* absent: nothing to hide */ }
  }
  return found;
}

/** Removes sandbox folders whose owner process on this host is gone (a crash, kill -9). */
export async function removeOrphans(root: string): Promise<void> {
  for await (const entry of Deno.readDir(root)) {
    if (!entry.isDirectory || !entry.name.startsWith("sbx_")) continue;
    const dir = `${root}/${entry.name}`;
    let owner: Owner;
    try {
      owner = JSON.parse(await Deno.readTextFile(`${dir}/${OWNER_FILE}`));
    } catch {
      continue; // being created right now, or not ours
    }
    if (owner.host !== Deno.hostname() || processAlive(owner.pid)) continue;
    killLeftovers(dir);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Kills the bubblewrap processes of a dead owner's sandbox folder `dir`. They normally die with
 * their owner (`--die-with-parent`), but one that was starting when its owner was killed may
 * not yet have asked to: it is found by the folder in its command line.
 */
function killLeftovers(dir: string): void {
  for (const { pid, argv } of hostProcesses()) {
    if (argv[0]?.endsWith("bwrap") && argv.some((arg) => arg.startsWith(`${dir}/`))) {
      killBwrap(pid);
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* exited while we looked */ }
    }
  }
}
