/**
 * The registered sandbox backends: how each is made from the configuration, and when it cannot
 * be. The gateway makes every one its configuration allows; `SANDBOX_BACKEND` picks the default
 * and a rollout's `sandbox.backend` another. A new backend is a file with its `SandboxBackend`
 * and its {@linkcode SandboxBackendKind}, a line here, and its settings in the configuration.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { ConfigError } from "../errors/mod.ts";
import { E2B_BACKEND } from "./e2b.ts";
import { LOCAL_BACKEND } from "./local.ts";
import type { BackendContext, SandboxBackend, SandboxBackendKind } from "./sandbox.ts";

/** Every sandbox backend the gateway has, the default first. */
export const SANDBOX_BACKEND_KINDS: readonly SandboxBackendKind[] = [LOCAL_BACKEND, E2B_BACKEND];

/** The kind called `name`, or `undefined`. */
export function sandboxBackendKind(name: string): SandboxBackendKind | undefined {
  return SANDBOX_BACKEND_KINDS.find((kind) => kind.name === name);
}

/**
 * Checks that `SANDBOX_BACKEND` names a registered backend this configuration can make.
 *
 * @throws {ConfigError} naming `SANDBOX_BACKEND` and the known backends.
 */
export function checkSandboxBackend(config: Config): void {
  const kind = sandboxBackendKind(config.sandboxBackend);
  if (kind === undefined) {
    const known = SANDBOX_BACKEND_KINDS.map((known) => known.name).join(", ");
    throw new ConfigError(
      "SANDBOX_BACKEND",
      `Invalid SANDBOX_BACKEND: expected one of ${known}, got "${config.sandboxBackend}"`,
    );
  }
  const why = kind.unavailable(config);
  if (why !== null) throw new ConfigError("SANDBOX_BACKEND", `Invalid SANDBOX_BACKEND: ${why}`);
}

/** Every backend `config` can make, by name. */
export function sandboxBackends(
  config: Config,
  context: BackendContext,
): Map<string, SandboxBackend> {
  return new Map(
    SANDBOX_BACKEND_KINDS.filter((kind) => kind.unavailable(config) === null)
      .map((kind) => [kind.name, kind.create(config, context)]),
  );
}
