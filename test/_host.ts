/**
 * Test helpers that look at this machine: processes by a marker in their command line, folder
 * contents, and waiting (bounded) for a condition.
 *
 * @module
 */
import { hostProcesses } from "../lib/sandbox/mod.ts";
import { pollUntil } from "../lib/timing/mod.ts";

/** The host processes whose command line carries `marker` (zombies have none). */
export function processesWith(marker: string): { pid: number; cmdline: string }[] {
  return hostProcesses().filter(({ pid }) => pid !== Deno.pid)
    .map(({ pid, argv }) => ({ pid, cmdline: argv.join(" ") }))
    .filter(({ cmdline }) => cmdline.includes(marker));
}

/** The names in a folder, sorted (empty when it does not exist). */
export async function listDir(path: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(path)) names.push(entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names.sort();
}

/**
 * Resolves once `condition` holds, checking every 10 ms; fails after `limitMs` (a guard
 * against a hung test, not a timing assertion), saying `what` it waited for.
 */
export async function waitFor(
  condition: () => Promise<boolean>,
  what: string | (() => string),
  limitMs = 30_000,
): Promise<void> {
  if (!(await pollUntil(condition, { timeoutMs: limitMs, intervalMs: 10 }))) {
    throw new Error(`Gave up waiting for ${typeof what === "string" ? what : what()}`);
  }
}
