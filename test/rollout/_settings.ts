/**
 * A repository task as a `/rollout` request gives it, for tests of the request's agent settings.
 *
 * @module
 */

/** A task the schema takes: these tests never run it. */
export const TASK = {
  repo: "/r",
  base_commit: "abc1234",
  problem_statement: "It's broken.",
  eval_cmd: "true",
};
