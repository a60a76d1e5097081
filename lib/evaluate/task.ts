/**
 * The task spec shared by `/evaluate` and `/rollout`: where the repository comes from, the
 * commit to start at, what to run before the patch, and how to grade — one of `eval_cmd`,
 * `f2p_script`, `fail_to_pass`/`pass_to_pass` lists with a runner, or a Harbor task's tests
 * folder (`harbor_tests`, usually resolved from a task folder by `harbor.ts`).
 *
 * @module
 */
import { z } from "zod";
import { jsonBytes, MAX_METADATA_BYTES } from "../limits/mod.ts";
import { extraPathProblem } from "../sandbox/mod.ts";
import { shellQuote } from "../shell/mod.ts";
import { FIXTURE_NAME } from "./fixture_repos.ts";
import { checkPatchPaths, patchPaths } from "./patch_paths.ts";

/** A git URL the sandbox may clone. */
const GIT_URL = /^(?:https?|ssh|git|file):\/\/\S+$|^[\w.-]+@[\w.-]+:\S+$/;

/** A git revision that cannot be read as an option (no leading `-`). */
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._/^~-]{0,254}$/;

/** A path inside the repository: relative, no `..`, not an option. */
const REPO_PATH = /^(?![/-])(?!(?:.*\/)?\.\.(?:\/|$)).{1,4096}$/;

/**
 * Longest command a sandbox runs, in UTF-8 bytes: each is one argument of `sh -c`, and Linux
 * refuses an argument of 128 KiB or more (`MAX_ARG_STRLEN`). A test list counts with its
 * command, every test id quoted.
 */
export const MAX_COMMAND_BYTES = 100_000;
/** Largest `env`, in UTF-8 bytes of its names and values (they travel as arguments too). */
export const MAX_ENV_BYTES = 65_536;
/**
 * Largest set of protected paths (`protected_paths` and the files `test_patch` touches), in
 * UTF-8 bytes quoted for the shell: the script that puts them back names each one twice.
 */
export const MAX_PROTECTED_BYTES = 32_768;

/** Most files of a Harbor task's tests folder. */
export const MAX_HARBOR_TEST_FILES = 256;
/** Largest file of a Harbor task's tests folder, in bytes. */
export const MAX_HARBOR_TEST_FILE_BYTES = 1024 * 1024;
/** Largest Harbor tests folder, in bytes of all its files. */
export const MAX_HARBOR_TESTS_BYTES = 4 * 1024 * 1024;

/** Bytes of `text` as UTF-8. */
function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** A shell command, at most {@linkcode MAX_COMMAND_BYTES}. */
const Command = z.string().min(1).refine(
  (command) => utf8Bytes(command) <= MAX_COMMAND_BYTES,
  `expected at most ${MAX_COMMAND_BYTES} bytes of UTF-8`,
);

/** Test runners a task's test lists can name. */
export const RUNNERS = ["unittest", "pytest", "node"] as const;

/** A task's test runner. */
export type Runner = typeof RUNNERS[number];

const TestList = z.array(z.string().min(1).max(1000)).max(10_000);

/** Bytes that `base64` decodes to (it is checked to be base64 first). */
function base64Bytes(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

/** A file of a Harbor task's tests folder, written under `/tests` when the task is graded. */
export const HarborTestFileSchema = z.strictObject({
  /** Its path in the tests folder: relative, plain names, no `..`. */
  path: z.string().max(1024).regex(
    /^(?!\.{1,2}(?:\/|$))(?!.*\/\.{1,2}(?:\/|$))[\w.-]+(?:\/[\w.-]+)*$/,
    "expected a relative path of plain names (letters, digits, ., _, -), without . or ..",
  ),
  /** Its bytes, base64. */
  base64: z.string().max(Math.ceil(MAX_HARBOR_TEST_FILE_BYTES / 3) * 4).regex(
    /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/,
    "expected base64",
  ),
  /** Whether it is written executable. */
  executable: z.boolean().default(false),
});

/** A file of a Harbor task's tests folder. */
export type HarborTestFile = z.output<typeof HarborTestFileSchema>;

/** The task spec, as a request carries it. */
export const TaskSchema = z.strictObject({
  /** An absolute path of a git repository on the gateway's machine, `fixture:<name>`, or a git URL. */
  repo: z.string().min(1).max(4096).refine(
    (repo) => repo.startsWith("/") || GIT_URL.test(repo) || /^fixture:/.test(repo),
    "expected an absolute path, fixture:<name>, or a git URL",
  ).refine(
    (repo) => !repo.startsWith("fixture:") || FIXTURE_NAME.test(repo.slice(8)),
    "expected fixture:<name> with a name of lowercase letters, digits and _",
  ).optional(),
  /** Where the repository already is inside an E2B template, instead of `repo`. */
  repo_dir: z.string().regex(/^\/\S*$/, "expected an absolute path").optional(),
  base_commit: z.string().regex(REVISION, "expected a commit id or another git revision"),
  /** E2B template the sandbox is made from. */
  template: z.string().min(1).max(256).optional(),
  /** Shell commands run in the work tree, in order, before the patch is applied. */
  pre_commands: z.array(Command).max(100).default([]),
  problem_statement: z.string().max(1_000_000).default(""),
  /** Grading by exit status: 0 passes. */
  eval_cmd: Command.optional(),
  /** Grading by a self-contained test script written into the sandbox's scratch folder. */
  f2p_script: z.string().min(1).max(1_000_000).optional(),
  /** The script's file name; its extension picks how it runs unless `f2p_cmd` says. */
  f2p_filename: z.string().regex(/^[\w.-]{1,128}$/, "expected a plain file name").default(
    "test_f2p.py",
  ),
  /** How the script runs, `{script}` standing for its path. */
  f2p_cmd: Command.optional(),
  /** Tests that must pass with the patch (and failed without it). */
  fail_to_pass: TestList.optional(),
  /** Tests that must still pass with the patch. */
  pass_to_pass: TestList.default([]),
  /**
   * Grading as a Harbor task: these files written to `/tests`, `/logs/verifier` made empty,
   * `bash /tests/test.sh` run in the work tree, the score read from the reward file it writes.
   */
  harbor_tests: z.array(HarborTestFileSchema).min(1).max(MAX_HARBOR_TEST_FILES).optional(),
  /**
   * Another path where the work tree also appears inside the sandbox (Harbor's
   * `[environment] workdir`, `/app`), for tests and agents that name it.
   */
  workdir_alias: z.string().superRefine((path, ctx) => {
    const problem = extraPathProblem(path);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }).optional(),
  /** The runner of the test lists. */
  runner: z.enum(RUNNERS).optional(),
  /** A command running the listed tests, `{tests}` standing for their ids; overrides `runner`. */
  test_cmd: Command.optional(),
  /**
   * Paths (files or folders) a patch may not change: put back as at the base commit after the
   * patch is applied, so an agent cannot pass by editing the tests.
   */
  protected_paths: z.array(
    z.string().regex(REPO_PATH, "expected a relative path inside the repository"),
  )
    .max(1000).default([]),
  /** A diff of the task's own (tests) applied after the patch, its paths protected first. */
  test_patch: z.string().min(1).max(10_000_000).optional(),
  /** Environment variables of the pre-commands and the tests. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).default({}),
  /** Longest the whole evaluation may take, in milliseconds. */
  timeout_ms: z.number().int().min(100).max(24 * 3600_000).optional(),
  /** A configured judger's name. */
  judger: z.string().min(1).max(128).optional(),
  /** Labels, kept with the sandbox (E2B metadata) and in the result. */
  metadata: z.record(z.string(), z.string().max(1000)).refine(
    (metadata) => jsonBytes(metadata) <= MAX_METADATA_BYTES,
    `expected at most ${MAX_METADATA_BYTES} bytes of JSON`,
  ).optional(),
}).superRefine((task, ctx) => {
  const modes = [
    task.eval_cmd !== undefined,
    task.f2p_script !== undefined,
    task.fail_to_pass !== undefined,
    task.harbor_tests !== undefined,
  ].filter(Boolean).length;
  if (modes !== 1) {
    ctx.addIssue({
      code: "custom",
      message: "expected exactly one of eval_cmd, f2p_script, or fail_to_pass (with " +
        "pass_to_pass); or harbor_tests, a Harbor task's tests folder",
    });
  }
  if (task.harbor_tests !== undefined) {
    const paths = task.harbor_tests.map((file) => file.path);
    const problem = !paths.includes("test.sh")
      ? "the tests folder has no test.sh"
      : new Set(paths).size < paths.length
      ? "a path is given twice"
      : null;
    const bytes = task.harbor_tests.reduce((sum, file) => sum + base64Bytes(file.base64), 0);
    if (problem || bytes > MAX_HARBOR_TESTS_BYTES) {
      ctx.addIssue({
        code: "custom",
        path: ["harbor_tests"],
        message: problem ?? `${bytes} bytes of files, at most ${MAX_HARBOR_TESTS_BYTES}`,
      });
    }
  }
  if (task.fail_to_pass !== undefined && !task.runner && !task.test_cmd) {
    ctx.addIssue({
      code: "custom",
      path: ["runner"],
      message: `fail_to_pass needs a runner (${RUNNERS.join(", ")}) or a test_cmd`,
    });
  }
  if (task.f2p_script !== undefined && !task.f2p_cmd && !scriptCommand(task.f2p_filename)) {
    ctx.addIssue({
      code: "custom",
      path: ["f2p_cmd"],
      message: "f2p_filename has no known extension (.py, .js, .mjs, .cjs, .sh): give f2p_cmd",
    });
  }
  let guarded = task.protected_paths;
  if (task.test_patch !== undefined) {
    try {
      checkPatchPaths(task.test_patch);
      guarded = [...guarded, ...patchPaths(task.test_patch)];
    } catch (error) {
      ctx.addIssue({ code: "custom", path: ["test_patch"], message: (error as Error).message });
    }
  }
  const protectedBytes = quotedBytes(guarded);
  if (protectedBytes > MAX_PROTECTED_BYTES) {
    ctx.addIssue({
      code: "custom",
      path: [task.protected_paths.length > 0 ? "protected_paths" : "test_patch"],
      message: `the protected paths (with those of test_patch) take ${protectedBytes} bytes ` +
        `quoted, at most ${MAX_PROTECTED_BYTES}`,
    });
  }
  if (task.fail_to_pass !== undefined && (task.runner || task.test_cmd)) {
    const command = task.test_cmd ?? runnerCommand(task.runner!);
    const bytes = utf8Bytes(command) + quotedBytes([...task.fail_to_pass, ...task.pass_to_pass]);
    if (bytes > MAX_COMMAND_BYTES) {
      ctx.addIssue({
        code: "custom",
        path: ["fail_to_pass"],
        message: `the test command with every listed test id takes ${bytes} bytes, ` +
          `at most ${MAX_COMMAND_BYTES}`,
      });
    }
  }
  const envBytes = Object.entries(task.env).reduce(
    (sum, [name, value]) => sum + utf8Bytes(name) + utf8Bytes(value) + 2,
    0,
  );
  if (envBytes > MAX_ENV_BYTES) {
    ctx.addIssue({
      code: "custom",
      path: ["env"],
      message: `${envBytes} bytes of names and values, at most ${MAX_ENV_BYTES}`,
    });
  }
  if (task.repo === undefined && task.repo_dir === undefined) {
    ctx.addIssue({ code: "custom", path: ["repo"], message: "field required" });
  }
});

/** A validated task. */
export type Task = z.output<typeof TaskSchema>;

/** How a task is graded. */
export type GradingMode = "eval_cmd" | "f2p_script" | "test_lists" | "harbor";

/** The grading mode of a validated task. */
export function gradingMode(task: Task): GradingMode {
  if (task.eval_cmd !== undefined) return "eval_cmd";
  if (task.f2p_script !== undefined) return "f2p_script";
  if (task.harbor_tests !== undefined) return "harbor";
  return "test_lists";
}

/** The default command of a test script, by its extension, `{script}` standing for its path. */
export function scriptCommand(filename: string): string | null {
  if (/\.py$/.test(filename)) return "python3 -m pytest -rA {script}";
  if (/\.(?:js|mjs|cjs)$/.test(filename)) return "node --test {script}";
  if (/\.sh$/.test(filename)) return "bash {script}";
  return null;
}

/** A test runner a task's test lists can name: how it runs them, and how to tell it is there. */
export interface TaskRunner {
  /** Its command, `{tests}` standing for the test ids. */
  readonly command: string;
  /** A command that succeeds where the runner can run (in a sandbox's `PATH`). */
  readonly probe: readonly [string, ...string[]];
  /** How to install it on a Debian host when it is not there. */
  readonly install: string;
}

/** The registered test runners. */
export const TASK_RUNNERS: { readonly [R in Runner]: TaskRunner } = {
  unittest: {
    command: "python3 -m unittest -v {tests}",
    probe: ["python3", "-c", "import unittest"],
    install: "apt-get install python3",
  },
  pytest: {
    command: "python3 -m pytest -rA {tests}",
    probe: ["python3", "-c", "import pytest"],
    install: "apt-get install python3-pytest",
  },
  node: {
    // node --test selects files, not names: every test runs and the lists pick the results.
    command: "node --test --test-reporter=tap",
    probe: ["node", "--version"],
    install: "apt-get install nodejs",
  },
};

/** The command of a runner, `{tests}` standing for the test ids. */
export function runnerCommand(runner: Runner): string {
  return TASK_RUNNERS[runner].command;
}

/** Bytes of `values` quoted for a POSIX shell, one space apart. */
function quotedBytes(values: readonly string[]): number {
  return values.reduce((sum, value) => sum + utf8Bytes(shellQuote(value)) + 1, 0);
}
