/**
 * The reward a Harbor task's verifier leaves: `bash /tests/test.sh` writes
 * `/logs/verifier/reward.json` (read first) or `/logs/verifier/reward.txt`, and the score is read
 * from that file alone, never from the exit status.
 *
 * @module
 */

/** The folder the verifier writes its reward into, inside the sandbox. */
export const HARBOR_VERIFIER_DIR = "/logs/verifier";
/** Where a Harbor task's tests folder is written inside the sandbox. */
export const HARBOR_TESTS_DIR = "/tests";
/** The reward files, in the order they are looked for. */
export const HARBOR_REWARD_FILES = ["reward.json", "reward.txt"] as const;
/** Largest reward file read, in bytes; a larger one is malformed. */
export const MAX_REWARD_FILE_BYTES = 65_536;

/** A reward file's name. */
export type HarborRewardFile = typeof HARBOR_REWARD_FILES[number];

/** The reward a verifier wrote. */
export interface VerifierReward {
  /** The file it was read from. */
  readonly file: HarborRewardFile;
  /**
   * The score: the number in the file; the `reward` key of a JSON object; for an object without
   * one (every key a separate reward), the mean of its values.
   */
  readonly reward: number;
  /**
   * What else the file said: the other keys of an object with `reward`, or every key of an
   * object without one; empty for a plain number.
   */
  readonly metrics: Readonly<Record<string, unknown>>;
}

/**
 * The reward in a reward file's text, or what is wrong with it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseHarborReward } from "./harbor_reward.ts";
 * assert.deepEqual(parseHarborReward("reward.txt", "1\n"), {
 *   file: "reward.txt",
 *   reward: 1,
 *   metrics: {},
 * });
 * assert.deepEqual(parseHarborReward("reward.json", '{"reward": 0.5, "passed": 3}'), {
 *   file: "reward.json",
 *   reward: 0.5,
 *   metrics: { passed: 3 },
 * });
 * // No "reward" key: the mean of the numbers.
 * assert.deepEqual(parseHarborReward("reward.json", '{"a": 1, "b": 0}'), {
 *   file: "reward.json",
 *   reward: 0.5,
 *   metrics: { a: 1, b: 0 },
 * });
 * assert.ok("error" in parseHarborReward("reward.txt", "yes"));
 * ```
 */
export function parseHarborReward(
  file: HarborRewardFile,
  text: string,
): VerifierReward | { readonly error: string } {
  const parsed = parseRewardFile(file, text);
  if ("error" in parsed || Math.abs(parsed.reward) <= MAX_ABS_REWARD) return parsed;
  // No verifier writes one; a number planted by the program under test would swamp its group.
  return {
    error: `${HARBOR_VERIFIER_DIR}/${file} holds reward ${parsed.reward}, outside ` +
      `[-${MAX_ABS_REWARD}, ${MAX_ABS_REWARD}]`,
  };
}

/** Largest reward, either way, a verifier's file may hold. */
export const MAX_ABS_REWARD = 1;

function parseRewardFile(
  file: HarborRewardFile,
  text: string,
): VerifierReward | { readonly error: string } {
  const where = `${HARBOR_VERIFIER_DIR}/${file}`;
  if (new TextEncoder().encode(text).length > MAX_REWARD_FILE_BYTES) {
    return { error: `${where} is larger than ${MAX_REWARD_FILE_BYTES} bytes` };
  }
  if (file === "reward.txt") {
    const reward = parseNumber(text.trim());
    return reward === null
      ? { error: `${where} holds ${quote(text)}, not a number` }
      : { file, reward, metrics: {} };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `${where} is not JSON: ${(error as Error).message}` };
  }
  if (typeof value === "number") {
    return Number.isFinite(value)
      ? { file, reward: value, metrics: {} }
      : { error: `${where} holds ${quote(text)}, not a finite number` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { error: `${where} holds ${describe(value)}: expected a number or an object` };
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (Object.hasOwn(value, "reward")) {
    const { reward, ...metrics } = value as Record<string, unknown>;
    if (typeof reward !== "number" || !Number.isFinite(reward)) {
      return { error: `${where}: "reward" is ${describe(reward)}, not a finite number` };
    }
    return { file, reward, metrics };
  }
  if (entries.length === 0) return { error: `${where} is an empty object: no reward in it` };
  const bad = entries.find(([, reward]) => typeof reward !== "number" || !Number.isFinite(reward));
  if (bad) {
    return {
      error: `${where} has no "reward" key, so every key is a reward, but "${bad[0]}" is ${
        describe(bad[1])
      }`,
    };
  }
  const sum = entries.reduce((total, [, reward]) => total + (reward as number), 0);
  return { file, reward: sum / entries.length, metrics: Object.fromEntries(entries) };
}

/** A decimal number as Harbor's verifiers write it (`1`, `0.25`, `-1`, `1e-3`), else `null`. */
function parseNumber(text: string): number | null {
  if (!/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)) return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

function quote(text: string): string {
  const short = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return JSON.stringify(short);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${quote(value)}`;
  if (typeof value === "object") return "an object";
  return typeof value === "number" ? String(value) : `a ${typeof value}`;
}
