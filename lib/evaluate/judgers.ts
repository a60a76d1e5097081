/**
 * Judgers: named scoring functions that turn an evaluation's evidence into a reward. The
 * built-in `tests` judger scores by the task's tests; others are modules named in
 * configuration. All are loaded and their options checked at start-up, never on a request.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import { z } from "zod";
import type { Evidence } from "./evidence.ts";
import type { Task } from "./task.ts";

/** What a judger is given. */
export interface JudgeInput {
  readonly task: Task;
  readonly patch: string;
  readonly evidence: Evidence;
  /** The judger's options from configuration, as its module checked them. */
  readonly options: unknown;
}

/** A reward: a finite numeric `score`, and anything else the judger wants to report. */
export interface Reward {
  readonly score: number;
  readonly [key: string]: unknown;
}

/** A scoring function. */
export type JudgeFn = (input: JudgeInput) => Reward | Promise<Reward>;

/** A judger ready to score. */
export interface Judger {
  readonly name: string;
  /** `tests` or the module's path. */
  readonly use: string;
  readonly options: unknown;
  judge(input: Omit<JudgeInput, "options">): Promise<Reward>;
}

/** How configuration names a judger: a built-in or a module path, and its options. */
export interface JudgerSpec {
  readonly use: string;
  readonly options?: unknown;
}

/** A judger that could not be loaded, or whose options were refused. */
export class JudgerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JudgerConfigError";
  }
}

/** A judger that returned something other than a reward, or threw. */
export class JudgerError extends Error implements CodedError {
  readonly code = "judger_failed" as const;
  constructor(readonly judger: string, message: string, options?: ErrorOptions) {
    super(`Judger "${judger}" ${message}`, options);
    this.name = "JudgerError";
  }
}

/** Options of the built-in `tests` judger. */
const TestsOptions = z.strictObject({
  /** With test lists: the share of fail_to_pass tests passing (0 if a pass_to_pass one fails). */
  partial_credit: z.boolean().default(false),
});

/**
 * The built-in judger: 1 when the tests pass (as the task's grading mode reads them), else 0; a
 * Harbor task's verifier reward as it is.
 */
const testsJudger: JudgeFn = ({ task, evidence, options }) => {
  const { partial_credit } = options as z.output<typeof TestsOptions>;
  if (evidence.verifier !== undefined) return { score: evidence.verifier.reward };
  if (partial_credit && task.fail_to_pass !== undefined && evidence.applied_cleanly) {
    const passed = new Set(evidence.tests.passed);
    const regressed = task.pass_to_pass.some((test) => !passed.has(test));
    const total = task.fail_to_pass.length;
    const fixed = task.fail_to_pass.filter((test) => passed.has(test)).length;
    return { score: regressed || total === 0 ? (regressed ? 0 : 1) : fixed / total };
  }
  return { score: evidence.reason === "passed" ? 1 : 0 };
};

const BUILT_IN: Record<string, { fn: JudgeFn; options: z.ZodType }> = {
  tests: { fn: testsJudger, options: TestsOptions },
};

/**
 * Loads every configured judger and the built-in `tests` (unless configuration redefines it),
 * checking that `defaultName` is among them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loadJudgers } from "./judgers.ts";
 * const base = new URL("../../fixtures/judgers", import.meta.url).pathname;
 * const specs = { concise: { use: "./length_penalty.ts", options: { per_line: 0.01 } } };
 * const judgers = await loadJudgers(specs, "tests", base);
 * // The built-in `tests` judger is always there.
 * assert.deepEqual([...judgers.keys()], ["tests", "concise"]);
 * ```
 * @throws {JudgerConfigError} naming the judger that cannot be loaded or the unknown default.
 */
export async function loadJudgers(
  specs: Readonly<Record<string, JudgerSpec>>,
  defaultName: string,
  baseDir: string,
): Promise<Map<string, Judger>> {
  const judgers = new Map<string, Judger>();
  const all: Record<string, JudgerSpec> = { tests: { use: "tests" }, ...specs };
  for (const [name, spec] of Object.entries(all)) {
    judgers.set(name, await loadJudger(name, spec, baseDir));
  }
  if (!judgers.has(defaultName)) {
    throw new JudgerConfigError(
      `Unknown judger "${defaultName}" in DEFAULT_JUDGER: configured judgers are ${
        [...judgers.keys()].join(", ")
      }`,
    );
  }
  return judgers;
}

async function loadJudger(name: string, spec: JudgerSpec, baseDir: string): Promise<Judger> {
  let fn: JudgeFn;
  let options: unknown;
  const builtIn = BUILT_IN[spec.use];
  if (builtIn) {
    fn = builtIn.fn;
    const parsed = builtIn.options.safeParse(spec.options ?? {});
    if (!parsed.success) {
      throw new JudgerConfigError(
        `Judger "${name}" has bad options: ${
          parsed.error.issues.map((i) => `${i.path.join(".") || "options"}: ${i.message}`).join(
            "; ",
          )
        }`,
      );
    }
    options = parsed.data;
  } else if (/^(?:\.{0,2}\/|file:)/.test(spec.use)) {
    ({ fn, options } = await loadModule(name, spec, baseDir));
  } else {
    throw new JudgerConfigError(
      `Judger "${name}" uses "${spec.use}", which is neither a built-in judger (${
        Object.keys(BUILT_IN).join(", ")
      }) nor a module path (starting with ./, ../ or /)`,
    );
  }
  return {
    name,
    use: spec.use,
    options,
    judge: async (input) => {
      let reward: unknown;
      try {
        reward = await fn({ ...input, options });
      } catch (error) {
        throw new JudgerError(name, `failed: ${(error as Error)?.message ?? error}`, {
          cause: error,
        });
      }
      if (
        typeof reward !== "object" || reward === null || Array.isArray(reward) ||
        typeof (reward as Reward).score !== "number" || !Number.isFinite((reward as Reward).score)
      ) {
        throw new JudgerError(
          name,
          `returned ${describeValue(reward)}: expected an object with a finite numeric score`,
        );
      }
      return reward as Reward;
    },
  };
}

/**
 * A judger module exports `judge` (or a default function) and may export `validateOptions`,
 * which returns the options to use or throws to refuse them.
 */
async function loadModule(
  name: string,
  spec: JudgerSpec,
  baseDir: string,
): Promise<{ fn: JudgeFn; options: unknown }> {
  const url = spec.use.startsWith("file:")
    ? spec.use
    : new URL(spec.use, `file://${baseDir.replace(/\/?$/, "/")}`).href;
  let module: Record<string, unknown>;
  try {
    module = await import(url);
  } catch (error) {
    throw new JudgerConfigError(
      `Judger "${name}" cannot be loaded from "${spec.use}": ${(error as Error).message}`,
    );
  }
  const fn = module.judge ?? module.default;
  if (typeof fn !== "function") {
    throw new JudgerConfigError(
      `Judger "${name}" module "${spec.use}" exports no judge function (export judge or a default function)`,
    );
  }
  let options = spec.options ?? {};
  if (typeof module.validateOptions === "function") {
    try {
      options = await module.validateOptions(options) ?? options;
    } catch (error) {
      throw new JudgerConfigError(
        `Judger "${name}" has bad options: ${(error as Error)?.message ?? error}`,
      );
    }
  }
  return { fn: fn as JudgeFn, options };
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value !== "object") return `a ${typeof value}`;
  const score = (value as Record<string, unknown>).score;
  return score === undefined
    ? "an object without score"
    : `an object whose score is ${JSON.stringify(score) ?? typeof score}`;
}
