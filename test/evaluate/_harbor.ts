/**
 * Test helpers for Harbor task folders: the fixture folders, their gold patches (the diff each
 * `solution/solve.sh` makes), and copies of a fixture to break.
 *
 * @module
 */
import { resolveHarborTask } from "../../lib/evaluate/mod.ts";
import { git } from "../_git_repo.ts";

/** Folder of the Harbor fixture tasks. */
export const HARBOR_FIXTURES_DIR = new URL("../../fixtures/harbor", import.meta.url).pathname;

/** The Harbor fixture tasks: one writing reward.txt, one reward.json with metrics. */
export const HARBOR_FIXTURES = ["fizzbuzz", "word_count"] as const;

/** What the fizzbuzz fixture's task.toml says (the listing's facts of it). */
export const FIZZBUZZ_FACTS = {
  name: "rollout-gateway/fizzbuzz",
  path: new URL("../../fixtures/harbor/fizzbuzz", import.meta.url).pathname,
  description: "Fix the FizzBuzz module so that multiples of 15 print FizzBuzz.",
  difficulty: "easy",
  category: "programming",
  tags: ["python", "fixture"],
  agent_timeout_sec: 120,
  verifier_timeout_sec: 60,
  docker_image: "rollout-gateway/harbor-fizzbuzz",
  workdir: "/app",
};

/** The path of Harbor fixture `name`. */
export function harborFixture(name: string): string {
  return `${HARBOR_FIXTURES_DIR}/${name}`;
}

/**
 * The patch a fixture's `solution/solve.sh` makes: run in a clone of the work tree built from
 * its `environment/`, then diffed against the base commit.
 */
export async function harborGold(name: string): Promise<string> {
  const scratch = await Deno.makeTempDir({ prefix: "rg-harbor-gold-" });
  try {
    const { task } = await resolveHarborTask(
      { harbor: harborFixture(name) },
      { cacheDir: `${scratch}/cache`, runsImages: false },
    );
    const tree = `${scratch}/tree`;
    await git(scratch, "clone", "--quiet", task.repo!, tree);
    const solve = await new Deno.Command("bash", {
      args: [`${harborFixture(name)}/solution/solve.sh`],
      cwd: tree,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!solve.success) throw new Error(new TextDecoder().decode(solve.stderr));
    return await git(tree, "diff", task.base_commit);
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}

/** A copy of fixture `name` under `dir` (its own folder, named `as`), to change. */
export async function copyFixture(name: string, dir: string, as = name): Promise<string> {
  const target = `${dir}/${as}`;
  const copy = await new Deno.Command("cp", { args: ["-a", harborFixture(name), target] })
    .output();
  if (!copy.success) throw new Error(new TextDecoder().decode(copy.stderr));
  return target;
}
