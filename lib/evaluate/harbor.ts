/**
 * Harbor task folders (the format of verl's remote-agent recipe, Terminal-Bench and friends) as
 * tasks: a request's `{harbor: <folder>}` resolved into a {@linkcode Task} graded in
 * `harbor_tests` mode, its work tree the folder's `environment/` committed as a git repository,
 * or on E2B the image's work dir. The folder is read by `harbor_folder.ts`.
 *
 * @module
 */
import { z } from "zod";
import { committedRepo } from "./fixture_repos.ts";
import type { TreeFile } from "./_tree.ts";
import {
  type HarborTask,
  HarborTaskError,
  type HarborTaskFacts,
  loadHarborTask,
} from "./harbor_folder.ts";
import { extraPathProblem, hostCommand } from "../sandbox/mod.ts";
import { storedTreePath } from "./stored_tree.ts";
import { type Task, TaskSchema } from "./task.ts";

const REVISION = /^[A-Za-z0-9][A-Za-z0-9._/^~-]{0,254}$/;

/** A Harbor task folder named in a request's `task`. */
export const HarborRefSchema = z.strictObject({
  /** The task folder: an absolute path on the gateway's machine. */
  harbor: z.string().max(4096).regex(/^(?:\/[^/\0]+)+\/?$/, "expected an absolute path").refine(
    (path) => !path.split("/").some((part) => part === "." || part === ".."),
    "expected a path without . or .. parts",
  ),
  /** A repository for the work tree instead of `environment/` or the image (as `task.repo`). */
  repo: TaskSchema.shape.repo,
  /** Its commit; given with `repo`, and only with it. */
  base_commit: z.string().regex(REVISION, "expected a commit id or another git revision")
    .optional(),
}).refine((ref) => (ref.repo === undefined) === (ref.base_commit === undefined), {
  message: "give repo and base_commit together, or neither",
  path: ["base_commit"],
});

/** A validated Harbor reference. */
export type HarborRef = z.output<typeof HarborRefSchema>;

/** Where a resolved task's work tree comes from and how it runs. */
export interface HarborResolveOptions {
  /** Host folder where work trees built from `environment/` are kept. */
  readonly cacheDir: string;
  /**
   * The task's sandboxes boot the image it names (`SandboxCapabilities.runsImages`): its work
   * tree is then the image's, not one built from `environment/` on this host.
   */
  readonly runsImages: boolean;
}

/** A Harbor task resolved into a task spec. */
export interface ResolvedHarborTask {
  readonly task: Task;
  /** `[agent] timeout_sec` in milliseconds, or `null` when the folder gives none. */
  readonly agentTimeoutMs: number | null;
  readonly facts: HarborTaskFacts;
  /**
   * The repository built from `environment/` on this host, or `null` when the work tree is
   * `ref.repo` or the image's. Keyed by `digest`, a digest of its files: another host unpacks
   * it under its own cache folder with the same commit id.
   */
  readonly environment: { readonly digest: string; readonly path: string } | null;
}

/**
 * The task spec of a Harbor task folder. Its work tree: `ref.repo` at `ref.base_commit` when
 * given; on E2B with `[environment] docker_image`, the image's work dir (the image is the
 * template); else `environment/` but its Dockerfile, committed as a git repository under
 * `options.cacheDir` (the same files, the same commit id).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveHarborTask } from "./harbor.ts";
 * const cacheDir = await Deno.makeTempDir();
 * const harbor = new URL("../../fixtures/harbor/fizzbuzz", import.meta.url).pathname;
 * const { agentTimeoutMs } = await resolveHarborTask({ harbor }, { cacheDir, runsImages: false });
 * assert.equal(agentTimeoutMs, 120_000);
 * await Deno.remove(cacheDir, { recursive: true });
 * ```
 * @throws {HarborTaskError} with a message starting `task.harbor: `.
 */
export async function resolveHarborTask(
  ref: HarborRef,
  options: HarborResolveOptions,
): Promise<ResolvedHarborTask> {
  let loaded: HarborTask;
  try {
    loaded = await loadHarborTask(ref.harbor);
  } catch (error) {
    if (!(error instanceof HarborTaskError)) throw error;
    throw new HarborTaskError(`task.harbor: ${error.message}`, { cause: error });
  }
  const image = options.runsImages && loaded.dockerImage !== null &&
    ref.repo === undefined;
  const built = ref.repo !== undefined || image
    ? null
    : await environmentRepo(loaded, options.cacheDir);
  const tree = ref.repo !== undefined
    ? { repo: ref.repo, base_commit: ref.base_commit }
    : built === null
    ? { repo_dir: loaded.workdir, base_commit: "HEAD" }
    : { repo: built.path, base_commit: built.commit };
  const verifierMs = loaded.verifierTimeoutSec === null
    ? undefined
    : Math.min(24 * 3_600_000, Math.max(100, Math.round(loaded.verifierTimeoutSec * 1000)));
  const parsed = TaskSchema.safeParse({
    ...tree,
    template: loaded.dockerImage ?? undefined,
    workdir_alias: !image && extraPathProblem(loaded.workdir) === null ? loaded.workdir : undefined,
    problem_statement: loaded.instruction,
    harbor_tests: loaded.tests,
    env: loaded.verifierEnv,
    timeout_ms: verifierMs,
    metadata: { harbor_task: loaded.name },
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new HarborTaskError(
      `task.harbor: ${loaded.path} does not make a valid task: ${
        issue.path.join(".") || "task"
      }: ${issue.message}`,
    );
  }
  const agentMs = loaded.agentTimeoutSec === null
    ? null
    : Math.round(loaded.agentTimeoutSec * 1000);
  return {
    task: parsed.data,
    agentTimeoutMs: agentMs,
    facts: stripped(loaded),
    environment: built && { digest: built.digest, path: built.path },
  };
}

/** The facts of a loaded task, without its contents. */
function stripped(task: HarborTask): HarborTaskFacts {
  const { instruction: _i, verifierEnv: _v, tests: _t, environment: _e, ...facts } = task;
  return facts;
}

/**
 * The git repository of a task's `environment/` files, kept under `cacheDir` by a digest of
 * their contents: a folder whose files change between requests gets another one.
 */
async function environmentRepo(
  task: HarborTask,
  cacheDir: string,
): Promise<{ digest: string; path: string; commit: string }> {
  const digest = await contentKey(task.environment);
  const target = storedTreePath(cacheDir, digest);
  await committedRepo(target, async (dir) => {
    for (const file of task.environment) {
      const path = `${dir}/${file.path}`;
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await Deno.copyFile(file.host, path);
      await Deno.chmod(path, file.executable ? 0o755 : 0o644);
    }
  });
  const commit = (await hostCommand("git", ["-C", target, "rev-parse", "HEAD"])).trim();
  return { digest, path: target, commit };
}

/** A digest of the files' paths, modes and bytes: the cache folder's name. */
async function contentKey(files: readonly TreeFile[]): Promise<string> {
  const parts: Uint8Array[] = [];
  const encoder = new TextEncoder();
  for (const file of files) {
    const bytes = await Deno.readFile(file.host);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    parts.push(encoder.encode(`${file.path}\0${file.executable ? 1 : 0}\0`), digest);
  }
  const all = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(digest.slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}
