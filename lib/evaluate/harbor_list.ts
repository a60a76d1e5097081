/**
 * Listing the Harbor task folders under a folder (`GET /tasks`): each with what its `task.toml`
 * says, or why it does not load.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import { HarborTaskError, type HarborTaskFacts, inspectHarborTask } from "./harbor_folder.ts";

/** Most task folders listed; the first ones by name are. */
export const MAX_TASKS_LISTED = 1000;
/** Most entries of the folder read before the listing stops looking. */
const MAX_ENTRIES_READ = 100_000;
/** Task folders inspected at once. */
const INSPECT_CONCURRENCY = 16;

/** A folder a request names does not exist. */
export class DirNotFoundError extends Error implements CodedError {
  readonly code = "dir_not_found" as const;
  constructor(dir: string) {
    super(`Folder "${dir}" does not exist`);
    this.name = "DirNotFoundError";
  }
}

/** A task folder that does not load, and why. */
export interface HarborTaskProblem {
  readonly name: string;
  readonly path: string;
  readonly error: string;
}

/** The task folders under a folder. */
export interface HarborTaskList {
  readonly dir: string;
  /** Sorted by folder name. */
  readonly tasks: readonly (HarborTaskFacts | HarborTaskProblem)[];
  /** More folders than {@linkcode MAX_TASKS_LISTED} were there; the first ones are listed. */
  readonly truncated: boolean;
}

/**
 * Every folder directly under `dir` (hidden ones aside) as a Harbor task: its facts, or the
 * error that stops it loading.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listHarborTasks } from "./harbor_list.ts";
 * const { tasks } = await listHarborTasks(
 *   new URL("../../fixtures/harbor", import.meta.url).pathname,
 * );
 * const names = tasks.map((task) => "error" in task ? task.error : task.name);
 * assert.ok(names.includes("rollout-gateway/fizzbuzz"));
 * ```
 * @throws {DirNotFoundError} when `dir` does not exist; {@linkcode HarborTaskError} when it is
 * not a folder.
 */
export async function listHarborTasks(dir: string): Promise<HarborTaskList> {
  let root: string;
  try {
    root = await Deno.realPath(dir);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) throw new DirNotFoundError(dir);
    throw new HarborTaskError(`dir: "${dir}" cannot be read: ${(error as Error).message}`);
  }
  if (!(await Deno.stat(root)).isDirectory) {
    throw new HarborTaskError(`dir: "${dir}" is not a folder`);
  }
  const names: string[] = [];
  let truncated = false;
  for await (const entry of Deno.readDir(root)) {
    if (entry.name.startsWith(".")) continue;
    if (names.length >= MAX_ENTRIES_READ) {
      truncated = true;
      break;
    }
    if (entry.isDirectory || entry.isSymlink) names.push(entry.name);
  }
  names.sort();
  if (names.length > MAX_TASKS_LISTED) {
    names.length = MAX_TASKS_LISTED;
    truncated = true;
  }
  const tasks: (HarborTaskFacts | HarborTaskProblem | null)[] = new Array(names.length).fill(null);
  let next = 0;
  const inspect = async () => {
    for (let index = next++; index < names.length; index = next++) {
      const path = `${root}/${names[index]}`;
      try {
        if (!(await Deno.stat(path)).isDirectory) continue; // a link to a file
        tasks[index] = await inspectHarborTask(path);
      } catch (error) {
        const fileSystem = Object.values(Deno.errors).some((type) => error instanceof type);
        if (!(error instanceof HarborTaskError) && !fileSystem) throw error;
        tasks[index] = { name: names[index], path, error: (error as Error).message };
      }
    }
  };
  await Promise.all(Array.from({ length: INSPECT_CONCURRENCY }, inspect));
  return { dir: root, tasks: tasks.filter((task) => task !== null), truncated };
}
