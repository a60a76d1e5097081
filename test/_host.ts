/**
 * Test helpers that look at this machine: processes by a marker in their command line, folder
 * contents, and waiting (bounded) for a condition.
 *
 * @module
 */

/** The host processes whose command line carries `marker` (zombies have none). */
export async function processesWith(marker: string): Promise<{ pid: number; cmdline: string }[]> {
  const found = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name) || Number(entry.name) === Deno.pid) continue;
    try {
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`);
      if (cmdline.includes(marker)) {
        found.push({ pid: Number(entry.name), cmdline: cmdline.replaceAll("\0", " ") });
      }
    } catch { /* exited meanwhile */ }
  }
  return found;
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
  const deadline = Date.now() + limitMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      throw new Error(`Gave up waiting for ${typeof what === "string" ? what : what()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
