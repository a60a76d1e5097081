/**
 * Reading a Harbor task folder: `task.toml` (parsed with a real TOML parser), `instruction.md`,
 * `tests/` and `environment/`, every size bounded and no symbolic link leading out of the
 * folder. `harbor.ts` resolves what is read into a task spec.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { parse as parseToml, TomlError } from "smol-toml";
import { z } from "zod";
import type { CodedError } from "../errors/mod.ts";
import { readTree, TreeError, type TreeFile } from "./_tree.ts";
import {
  type HarborTestFile,
  MAX_HARBOR_TEST_FILE_BYTES,
  MAX_HARBOR_TEST_FILES,
  MAX_HARBOR_TESTS_BYTES,
} from "./task.ts";

/** Largest `task.toml`, in bytes. */
export const MAX_TASK_TOML_BYTES = 65_536;
/** Largest `instruction.md`, in bytes. */
export const MAX_INSTRUCTION_BYTES = 1_000_000;
/** Most files of `environment/` made into the local work tree. */
export const MAX_ENVIRONMENT_FILES = 10_000;
/** Largest `environment/`, in bytes of all its files. */
export const MAX_ENVIRONMENT_BYTES = 64 * 1024 * 1024;
/** The work dir of a task whose `[environment]` names none (Harbor's default). */
export const HARBOR_DEFAULT_WORKDIR = "/app";

/** A task folder that cannot be used, with what is wrong; answered 400 naming the field. */
export class HarborTaskError extends TypeError implements CodedError {
  readonly code = "invalid_request" as const;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HarborTaskError";
  }
}

const Text = (max: number) => z.string().max(max);
/** The parts of `task.toml` the gateway reads; the rest of Harbor's keys are let through. */
const TaskToml = z.looseObject({
  task: z.looseObject({ name: Text(256).optional(), description: Text(10_000).optional() })
    .optional(),
  metadata: z.looseObject({
    difficulty: Text(64).optional(),
    category: Text(256).optional(),
    tags: z.array(Text(128)).max(64).optional(),
  }).optional(),
  agent: z.looseObject({ timeout_sec: z.number().positive().max(7 * 86_400).optional() })
    .optional(),
  verifier: z.looseObject({
    timeout_sec: z.number().positive().max(86_400).optional(),
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), Text(65_536)).optional(),
  }).optional(),
  environment: z.looseObject({
    docker_image: z.string().min(1).max(256).optional(),
    workdir: z.string().regex(/^\/\S*$/, "expected an absolute path").max(4096).optional(),
  }).optional(),
});

/** What a task folder says of itself, as a task listing shows it. */
export interface HarborTaskFacts {
  /** `[task] name`, else the folder's name. */
  readonly name: string;
  /** The folder's real path. */
  readonly path: string;
  readonly description: string | null;
  readonly difficulty: string | null;
  readonly category: string | null;
  readonly tags: readonly string[];
  /** `[agent] timeout_sec`: the agent's budget in rollouts that set none. */
  readonly agentTimeoutSec: number | null;
  /** `[verifier] timeout_sec`: the grading's time limit. */
  readonly verifierTimeoutSec: number | null;
  /** `[environment] docker_image`: the E2B template the task runs in. */
  readonly dockerImage: string | null;
  /** `[environment] workdir`: where the work tree is inside the image (default `/app`). */
  readonly workdir: string;
}

/** A task folder read whole. */
export interface HarborTask extends HarborTaskFacts {
  /** `instruction.md`. */
  readonly instruction: string;
  /** `[verifier] env`, passed as they are (no `${VAR}` of the gateway's is filled in). */
  readonly verifierEnv: Readonly<Record<string, string>>;
  /** `tests/`, to be written to `/tests`. */
  readonly tests: readonly HarborTestFile[];
  /** `environment/` but its Dockerfile: the local work tree. */
  readonly environment: readonly TreeFile[];
}

/**
 * What a task folder says of itself, read from `task.toml` with the presence of
 * `instruction.md` and `tests/test.sh` checked (their contents are not read).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { inspectHarborTask } from "./harbor_folder.ts";
 * const facts = await inspectHarborTask(
 *   new URL("../../fixtures/harbor/fizzbuzz", import.meta.url).pathname,
 * );
 * assert.equal(facts.agentTimeoutSec, 120);
 * ```
 * @throws {HarborTaskError} saying what is wrong with the folder.
 */
export async function inspectHarborTask(dir: string): Promise<HarborTaskFacts> {
  const { facts } = await readTaskToml(dir);
  return facts;
}

/**
 * A task folder read whole, every file within its bounds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadHarborTask } from "./harbor_folder.ts";
 * const task = await loadHarborTask(
 *   new URL("../../fixtures/harbor/fizzbuzz", import.meta.url).pathname,
 * );
 * assert.deepEqual(task.tests.map((file) => file.path).sort(), ["test.sh", "test_outputs.py"]);
 * ```
 * @throws {HarborTaskError} saying what is wrong with the folder.
 */
export async function loadHarborTask(dir: string): Promise<HarborTask> {
  const { facts, env } = await readTaskToml(dir);
  const root = facts.path;
  const bytes = await readBounded(root, "instruction.md", MAX_INSTRUCTION_BYTES);
  let instruction: string;
  try {
    instruction = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new HarborTaskError(`${root}/instruction.md is not UTF-8 text`);
  }
  const tests = await tree(root, "tests", {
    files: MAX_HARBOR_TEST_FILES,
    bytes: MAX_HARBOR_TESTS_BYTES,
    fileBytes: MAX_HARBOR_TEST_FILE_BYTES,
  });
  const plain = /^[\w.-]+(?:\/[\w.-]+)*$/;
  const odd = tests.find((file) => !plain.test(file.path));
  if (odd) {
    throw new HarborTaskError(
      `${root}/tests/${odd.path}: test file names may hold only letters, digits, ., _ and -`,
    );
  }
  const environment = await tree(root, "environment", {
    files: MAX_ENVIRONMENT_FILES,
    bytes: MAX_ENVIRONMENT_BYTES,
    fileBytes: MAX_ENVIRONMENT_BYTES,
    optional: true,
  });
  return {
    ...facts,
    instruction,
    verifierEnv: env,
    tests: await Promise.all(tests.map(async (file) => ({
      path: file.path,
      base64: Buffer.from(await Deno.readFile(file.host)).toString("base64"),
      executable: file.executable,
    }))),
    environment: environment.filter((file) => file.path !== "Dockerfile"),
  };
}

/**
 * The folder's reference solution, `solution/` (bounded as `tests/` is), to be written to
 * `/solution` and run as `bash /solution/solve.sh` in the work tree; `null` when the folder has
 * no `solution/solve.sh`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadHarborSolution } from "./harbor_folder.ts";
 * const files = await loadHarborSolution(
 *   new URL("../../fixtures/harbor/fizzbuzz", import.meta.url).pathname,
 * );
 * assert.deepEqual(files?.map((file) => file.path), ["solve.sh"]);
 * ```
 * @throws {HarborTaskError} saying what is wrong with the folder.
 */
export async function loadHarborSolution(dir: string): Promise<HarborTestFile[] | null> {
  const { facts } = await readTaskToml(dir);
  const files = await tree(facts.path, "solution", {
    files: MAX_HARBOR_TEST_FILES,
    bytes: MAX_HARBOR_TESTS_BYTES,
    fileBytes: MAX_HARBOR_TEST_FILE_BYTES,
    optional: true,
  });
  if (!files.some((file) => file.path === "solve.sh")) return null;
  const plain = /^[\w.-]+(?:\/[\w.-]+)*$/;
  const odd = files.find((file) => !plain.test(file.path));
  if (odd) {
    throw new HarborTaskError(
      `${facts.path}/solution/${odd.path}: solution file names may hold only letters, digits, ., _ and -`,
    );
  }
  return await Promise.all(files.map(async (file) => ({
    path: file.path,
    base64: Buffer.from(await Deno.readFile(file.host)).toString("base64"),
    executable: file.executable,
  })));
}

/** `task.toml` of the folder, read, parsed and checked, with the required files present. */
async function readTaskToml(
  dir: string,
): Promise<{ facts: HarborTaskFacts; env: Record<string, string> }> {
  let root: string;
  try {
    root = await Deno.realPath(dir);
    if (!(await Deno.stat(root)).isDirectory) throw new HarborTaskError(`${dir} is not a folder`);
  } catch (error) {
    if (error instanceof HarborTaskError) throw error;
    if (error instanceof Deno.errors.NotFound) {
      throw new HarborTaskError(`${dir} does not exist`);
    }
    throw new HarborTaskError(`${dir} cannot be read: ${(error as Error).message}`);
  }
  const text = new TextDecoder().decode(await readBounded(root, "task.toml", MAX_TASK_TOML_BYTES));
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const reason = error.message.split("\n")[0].replace(/^Invalid TOML document: /, "");
    throw new HarborTaskError(
      `${root}/task.toml is not valid TOML at line ${error.line}, column ${error.column}: ${reason}`,
    );
  }
  const parsed = TaskToml.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue.path.map(String);
    const key = path.length > 1 ? `[${path[0]}] ${path.slice(1).join(".")}` : path.join("");
    throw new HarborTaskError(`${root}/task.toml: ${key || "the document"}: ${issue.message}`);
  }
  await readBounded(root, "instruction.md", MAX_INSTRUCTION_BYTES, { statOnly: true });
  await readBounded(root, "tests/test.sh", MAX_HARBOR_TEST_FILE_BYTES, { statOnly: true });
  const toml = parsed.data;
  const workdir = toml.environment?.workdir ?? HARBOR_DEFAULT_WORKDIR;
  return {
    facts: {
      name: toml.task?.name ?? root.slice(root.lastIndexOf("/") + 1),
      path: root,
      description: toml.task?.description ?? null,
      difficulty: toml.metadata?.difficulty ?? null,
      category: toml.metadata?.category ?? null,
      tags: toml.metadata?.tags ?? [],
      agentTimeoutSec: toml.agent?.timeout_sec ?? null,
      verifierTimeoutSec: toml.verifier?.timeout_sec ?? null,
      dockerImage: toml.environment?.docker_image ?? null,
      workdir: workdir.length > 1 ? workdir.replace(/\/+$/, "") : workdir,
    },
    env: toml.verifier?.env ?? {},
  };
}

/**
 * A file of the task folder, at most `max` bytes, that is no link out of the folder (with
 * `statOnly`, only checked).
 */
async function readBounded(
  root: string,
  name: string,
  max: number,
  options: { statOnly?: boolean } = {},
): Promise<Uint8Array> {
  let real: string;
  try {
    real = await Deno.realPath(`${root}/${name}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) throw new HarborTaskError(`${root} has no ${name}`);
    throw new HarborTaskError(`${root}/${name} cannot be read: ${(error as Error).message}`);
  }
  if (!real.startsWith(`${root}/`)) {
    throw new HarborTaskError(`${root}/${name} is a symbolic link out of the task folder`);
  }
  const info = await Deno.stat(real);
  if (!info.isFile) throw new HarborTaskError(`${root}/${name} is not a file`);
  if (info.size > max) {
    throw new HarborTaskError(`${root}/${name} has ${info.size} bytes, at most ${max}`);
  }
  if (options.statOnly) return new Uint8Array();
  const bytes = await Deno.readFile(real);
  if (bytes.length > max) {
    throw new HarborTaskError(`${root}/${name} has ${bytes.length} bytes, at most ${max}`);
  }
  return bytes;
}

/** The files of a subfolder, bounded; `TreeError`s become the task's errors. */
async function tree(
  root: string,
  sub: string,
  limits: Parameters<typeof readTree>[2],
): Promise<TreeFile[]> {
  try {
    return await readTree(root, sub, limits);
  } catch (error) {
    if (error instanceof TreeError) throw new HarborTaskError(error.message);
    throw error;
  }
}
