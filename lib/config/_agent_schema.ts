/**
 * The install variables of every listed agent with a CLI package, generated from its record's
 * declaration (`lib/agents`): `<PREFIX>_BIN`, `<PREFIX>_PACKAGE`, `<PREFIX>_TARBALL` and any
 * more host files it names, and the resolved settings they give, by agent name.
 *
 * @module
 */
import { z } from "zod";
import {
  type AgentInstallSettings,
  AGENTS,
  type AnyAgent,
  installVariables,
  type PackagedAgent,
} from "../agents/mod.ts";
import { variable } from "./_variable.ts";

/** A path on this host. */
const absoluteFile = z.string().regex(/^\//);
/** What `npm install` takes. */
const npmSpec = z.string().min(1);

/** An absolute file path named by the variable `name`, `null` when unset. */
function fileVariable(name: string, shown: string, meaning: string) {
  return variable(name, absoluteFile, { expected: "an absolute file path", shown, meaning });
}

/** The variables of `agent`'s install, as its declaration words them. */
function installSchema(agent: PackagedAgent) {
  const { install, package: pkg } = agent;
  const names = installVariables(install);
  const { of = agent.title, inside } = install.tarball;
  const shape = {
    bin: fileVariable(names.bin, install.bin.shown, install.bin.meaning),
    package: variable(names.package, npmSpec, {
      expected: "an npm package spec",
      shown: `the version \`tools/${pkg.folder}/package.json\` pins`,
      meaning: `what an E2B sandbox without \`${pkg.bin}\` installs with npm`,
    }),
    tarball: fileVariable(
      names.tarball,
      "unset",
      `an npm tarball of ${of} on this host${inside === undefined ? "" : ` (${inside})`}, ` +
        `uploaded to an E2B sandbox without \`${pkg.bin}\` and ` +
        `${pkg.unpack === undefined ? "installed offline" : "unpacked"} instead`,
    ),
  };
  const extra = install.extra ?? [];
  if (extra.length === 0) return z.object(shape);
  return z.object({
    ...shape,
    extra: z.object(Object.fromEntries(
      extra.map((file) => [file.variable, fileVariable(file.variable, file.shown, file.meaning)]),
    )),
  });
}

/** The agents whose CLI is a package, with install variables. */
function packagedAgents(): PackagedAgent[] {
  return (AGENTS as readonly AnyAgent[]).filter((agent): agent is PackagedAgent =>
    agent.package !== undefined
  );
}

/**
 * The install variables of every listed agent with a CLI package, in the list's order, each
 * agent's settings under its name (`rollout.agents.claude_code.bin` is `CLAUDE_CODE_BIN`).
 */
export const AgentInstallsSchema = z.object(
  Object.fromEntries(packagedAgents().map((agent) => [agent.name, installSchema(agent)])),
);

/** Each agent's install settings as {@linkcode AgentInstallsSchema} parses them. */
export type ParsedAgentInstalls = z.output<typeof AgentInstallsSchema>;

/** Each agent's install settings by agent name, frozen: what `Config["rollout"]["agents"]` holds. */
export function agentInstallSettings(
  parsed: ParsedAgentInstalls,
): ReadonlyMap<string, AgentInstallSettings> {
  return new Map(
    Object.entries(parsed).map(([name, settings]) => {
      const { bin, package: pkg, tarball } = settings;
      const extra = "extra" in settings ? settings.extra : {};
      return [name, Object.freeze({ bin, package: pkg, tarball, extra: Object.freeze(extra) })];
    }),
  );
}
