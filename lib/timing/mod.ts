/**
 * Waiting and comparing in time: a cancellable sleep, a poll with a deadline, a retry's backoff,
 * a constant-time compare of secrets.
 *
 * @module
 */
export * from "./sleep.ts";
export * from "./poll_until.ts";
export * from "./same_secret.ts";
export * from "./backoff.ts";
