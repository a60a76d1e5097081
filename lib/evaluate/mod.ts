/** Grading patches: task specs, evaluation in a sandbox, test reports and judgers. @module */
export * from "./task_verdicts.ts";
export * from "./evaluate.ts";
export * from "./evidence.ts";
export * from "./fixture_repos.ts";
export * from "./harbor.ts";
export * from "./harbor_folder.ts";
export * from "./harbor_list.ts";
export * from "./harbor_reward.ts";
export * from "./judgers.ts";
export * from "./patch_paths.ts";
export * from "./slots.ts";
export * from "./stored_tree.ts";
export * from "./task.ts";
export * from "./test_evidence.ts";
export * from "./test_report.ts";
export * from "./protect.ts";
export * from "./runners_here.ts";
