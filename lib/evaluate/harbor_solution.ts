/**
 * A Harbor task's reference solution as a gold patch: `solution/` written to `/solution` in a
 * fresh sandbox at the task's base commit, `bash /solution/solve.sh` run in the work tree as an
 * agent would be (no network, like the tests), and what it changed taken as a binary git diff
 * against the base commit. Files it writes outside the work tree, or that git ignores, are not in
 * the patch.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { interleaved, type Sandbox } from "../sandbox/mod.ts";
import type { EvaluateDeps } from "./evaluate.ts";
import { repoSource } from "./evaluate.ts";
import { HARBOR_SANDBOX_DIRS } from "./_harbor_grade.ts";
import { loadHarborSolution } from "./harbor_folder.ts";
import { sha256Hex } from "./task_verdicts.ts";
import { shellQuote } from "../shell/mod.ts";
import type { HarborTestFile, Task } from "./task.ts";

/** Where the solution is written inside the sandbox, as Harbor mounts it. */
export const HARBOR_SOLUTION_DIR = "/solution";

/** Largest gold patch a solution may make, in bytes (a task's `test_patch` bound). */
export const MAX_SOLUTION_PATCH_BYTES = 10_000_000;

/** What running a solution gave: its patch, or why there is none, in words. */
export type SolutionPatch = { readonly patch: string } | { readonly error: string };

/**
 * The patch `files` (a task folder's `solution/`) make to `task`'s work tree, run in a fresh
 * sandbox of `deps.backend`, killed whatever happens.
 *
 * @throws sandbox and repository errors as the backend raises them (not the solution's fault).
 */
export async function solutionPatch(
  deps: Pick<EvaluateDeps, "backend" | "cacheDir" | "timeoutMs" | "outputBytes">,
  task: Task,
  files: readonly HarborTestFile[],
  signal?: AbortSignal,
): Promise<SolutionPatch> {
  const timeoutMs = task.timeout_ms ?? deps.timeoutMs;
  let sandbox: Sandbox | null = null;
  try {
    sandbox = await deps.backend.create({
      repo: await repoSource(task, deps.cacheDir),
      commit: task.base_commit,
      template: task.template,
      metadata: { ...task.metadata, purpose: "solve" },
      network: false,
      writableDirs: [...HARBOR_SANDBOX_DIRS, HARBOR_SOLUTION_DIR],
      lifetimeMs: timeoutMs + 60_000,
      signal,
    });
    return await solve(sandbox, task, files, { ...deps, timeoutMs }, signal);
  } finally {
    await sandbox?.kill();
  }
}

async function solve(
  sandbox: Sandbox,
  task: Task,
  files: readonly HarborTestFile[],
  deps: Pick<EvaluateDeps, "timeoutMs" | "outputBytes">,
  signal: AbortSignal | undefined,
): Promise<SolutionPatch> {
  for (const file of files) {
    await sandbox.writeFile(
      `${HARBOR_SOLUTION_DIR}/${file.path}`,
      new Uint8Array(Buffer.from(file.base64, "base64")),
    );
  }
  const solved = await sandbox.exec(interleaved(`bash ${HARBOR_SOLUTION_DIR}/solve.sh`), {
    timeoutMs: deps.timeoutMs,
    env: task.env,
    outputBytes: deps.outputBytes,
    signal,
  });
  signal?.throwIfAborted();
  const tail = solved.stdout.trim().split("\n").slice(-3).join(" | ").slice(-500);
  if (solved.timedOut) return { error: `solution/solve.sh ran past the time limit: ${tail}` };
  if (solved.exitCode !== 0) {
    return { error: `solution/solve.sh exited with ${solved.exitCode}: ${tail || "no output"}` };
  }
  const out = `${sandbox.tmpdir}/rollout_solution.diff`;
  const diffed = await sandbox.exec(
    interleaved(
      `git add -A && git -c core.quotepath=off diff --cached --binary HEAD > ${shellQuote(out)}`,
    ),
    { timeoutMs: 60_000, outputBytes: deps.outputBytes, signal },
  );
  signal?.throwIfAborted();
  if (diffed.exitCode !== 0) {
    throw new Error(`Cannot read what solve.sh changed: ${diffed.stdout.slice(-500)}`);
  }
  const bytes = await sandbox.readFile(out);
  if (bytes.length > MAX_SOLUTION_PATCH_BYTES) {
    return {
      error: `solution/solve.sh changed ${bytes.length} bytes of diff, at most ` +
        `${MAX_SOLUTION_PATCH_BYTES}`,
    };
  }
  const patch = new TextDecoder().decode(bytes);
  return patch.trim().length === 0
    ? { error: "solution/solve.sh changed nothing in the work tree" }
    : { patch };
}

/**
 * The gold of a validation of a Harbor task whose folder ships `solution/solve.sh`: made by
 * running it when the validation is not kept, and kept by a digest of its files. `null` when the
 * folder has no solution.
 *
 * @throws {HarborTaskError} saying what is wrong with the folder.
 */
export async function harborGold(
  deps: Pick<EvaluateDeps, "backend" | "cacheDir" | "timeoutMs" | "outputBytes">,
  task: Task,
  dir: string,
  signal?: AbortSignal,
): Promise<{ make: () => Promise<SolutionPatch>; key: string } | null> {
  const files = await loadHarborSolution(dir);
  if (files === null) return null;
  const text = JSON.stringify(files.map((file) => [file.path, file.executable, file.base64]));
  const key = `solution:${await sha256Hex(text)}`;
  return { make: () => solutionPatch(deps, task, files, signal), key };
}
