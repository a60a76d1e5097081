/**
 * How a session's score is shared among its K trainable segments — the reward allocation, named
 * `reward_allocation` wherever a client sets it (`POST /sessions`, `POST /rollout`, the samples
 * export's query) and `REWARD_ALLOCATION` as the gateway's default.
 *
 * @module
 */

/**
 * The allocations: `uniform` (score / K each), `copy` (the score each), `final_only` (the score
 * to the final segment, 0 elsewhere).
 */
export const REWARD_ALLOCATIONS = ["uniform", "copy", "final_only"] as const;

/** One of {@linkcode REWARD_ALLOCATIONS}. */
export type RewardAllocation = typeof REWARD_ALLOCATIONS[number];
