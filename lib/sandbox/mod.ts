/** Sandboxes: a task's repository in an isolated place where commands run (local bubblewrap, E2B). @module */
export * from "./sandbox.ts";
export * from "./host_command.ts";
export * from "./local.ts";
export * from "./forward.ts";
export * from "./bwrap_args.ts";
export * from "./output_tail.ts";
export * from "./paths.ts";
export * from "./e2b.ts";
export * from "./git_bundle.ts";
export * from "./counted_backend.ts";
export * from "./host_processes.ts";
export * from "./backends.ts";
