/**
 * The evidence of an evaluation stopped before its tests could judge the patch: a patch refused
 * or not applying, a pre-command failing, a step past the time limit.
 *
 * @module
 */
import type { ExecResult } from "../sandbox/mod.ts";
import { type EvaluationReason, type Evidence, logTail } from "./evidence.ts";

/**
 * The evidence of a stop for `reason` (`detail`: what went wrong, in words), with the exit status
 * and log tail of the command that stopped it, if one did; no test named, nothing tampered.
 */
export function failure(
  reason: EvaluationReason,
  detail: string,
  appliedCleanly: boolean,
  result?: ExecResult,
): Evidence {
  return {
    applied_cleanly: appliedCleanly,
    reason,
    detail,
    tests: { passed: [], failed: [] },
    tampered: [],
    exit_code: result?.exitCode ?? null,
    log_tail: logTail(result?.stdout ?? ""),
  };
}

/** The evidence of a command that ran past the time limit (`detail`: which, in words). */
export function timedOut(result: ExecResult, detail: string, appliedCleanly: boolean): Evidence {
  return failure("timeout", detail, appliedCleanly, result);
}
