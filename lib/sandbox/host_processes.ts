/**
 * The host's processes, read from `/proc`: the one place that walks it. Sandboxes find and kill
 * what a dead owner left behind; tests and the fake E2B find processes by their command line,
 * their parent or their session.
 *
 * @module
 */

/** A live process of the host. */
export interface HostProcess {
  readonly pid: number;
  readonly ppid: number;
  /** Its session id (the pid of the session's leader). */
  readonly sid: number;
  /** Its command line, one argument per entry (empty for a kernel thread). */
  readonly argv: readonly string[];
}

/**
 * Every live process on the host, zombies left out. A process that ends while it is read is
 * left out too.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hostProcesses } from "./host_processes.ts";
 * const self = hostProcesses().find((process) => process.pid === Deno.pid);
 * assert.ok(self && self.argv.length > 0);
 * ```
 */
export function hostProcesses(): HostProcess[] {
  const found: HostProcess[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      // `pid (comm) state ppid pgrp session …`, where comm may hold spaces and parentheses.
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const [state, ppid, , sid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z") continue;
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      const argv = cmdline === "" ? [] : cmdline.replace(/\0$/, "").split("\0");
      found.push({ pid: Number(entry.name), ppid: Number(ppid), sid: Number(sid), argv });
    } catch { /* ended while we looked */ }
  }
  return found;
}

/** The process `pid` exists (a zombie included). */
export function processAlive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** The pids of `pid`'s children (its main thread's); empty when it has ended. */
export function childPids(pid: number): number[] {
  try {
    const children = Deno.readTextFileSync(`/proc/${pid}/task/${pid}/children`);
    return children.split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Resident memory of process `pid` in MiB; `null` when it cannot be read (it ended). */
export function residentMiB(pid: number): number | null {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kib = status.match(/^VmRSS:\s+(\d+) kB$/m)?.[1];
    return kib === undefined ? null : Math.round(Number(kib) / 1024);
  } catch {
    return null;
  }
}

/**
 * CPU time process `pid` has used, user and system, in milliseconds (`/proc/<pid>/stat`, at the
 * kernel's 100 ticks a second); `null` when it cannot be read (it ended).
 */
export function cpuMs(pid: number): number | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}
