/**
 * Test helpers for evaluations: the fixture tasks with their patches, scratch git repositories,
 * and evaluation dependencies over a backend.
 *
 * @module
 */
import {
  type EvaluateDeps,
  FIXTURE_TASKS_DIR,
  loadJudgers,
  type Task,
  TaskSchema,
} from "../../lib/evaluate/mod.ts";
import type { SandboxBackend } from "../../lib/sandbox/mod.ts";
import { git } from "../_git_repo.ts";

/** The fixture tasks. */
export const FIXTURES = ["python_unittest", "python_pytest", "node_test"] as const;

/** A fixture task and its three patches. */
export interface FixtureTask {
  readonly task: Task;
  readonly gold: string;
  readonly wrong: string;
  readonly malformed: string;
}

/** Reads fixture `name`. */
export async function fixtureTask(name: string): Promise<FixtureTask> {
  const dir = `${FIXTURE_TASKS_DIR}${name}`;
  const read = (file: string) => Deno.readTextFile(`${dir}/${file}`);
  return {
    task: TaskSchema.parse(JSON.parse(await read("task.json"))),
    gold: await read("gold.patch"),
    wrong: await read("wrong.patch"),
    malformed: await read("malformed.patch"),
  };
}

/** Evaluation deps over `backend` with the built-in judger, caching fixtures under `cacheDir`. */
export async function evaluateDeps(
  backend: SandboxBackend,
  cacheDir: string,
  overrides: Partial<EvaluateDeps> = {},
): Promise<EvaluateDeps> {
  return {
    backend,
    judgers: await loadJudgers({}, "tests", Deno.cwd()),
    defaultJudger: "tests",
    timeoutMs: 60_000,
    outputBytes: 1024 * 1024,
    cacheDir,
    ...overrides,
  };
}

/** A git repository under `dir` with one commit of `files`; returns its path and commit id. */
export async function scratchRepo(
  dir: string,
  files: Record<string, string>,
): Promise<{ path: string; commit: string }> {
  const path = await Deno.makeTempDir({ dir, prefix: "repo-" });
  for (const [name, content] of Object.entries(files)) {
    const file = `${path}/${name}`;
    await Deno.mkdir(file.slice(0, file.lastIndexOf("/")), { recursive: true });
    await Deno.writeTextFile(file, content);
  }
  await git(path, "init", "--quiet");
  await git(path, "add", "--all");
  await git(path, "commit", "--quiet", "-m", "base");
  return { path, commit: (await git(path, "rev-parse", "HEAD")).trim() };
}

/** `backend` with its sandbox boots counted. */
export function counting(
  backend: SandboxBackend,
): { backend: SandboxBackend; boots: () => number } {
  let boots = 0;
  const counted = new Proxy(backend, {
    get(target, name) {
      if (name === "create") {
        return (...args: Parameters<SandboxBackend["create"]>) => {
          boots++;
          return target.create(...args);
        };
      }
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { backend: counted, boots: () => boots };
}
