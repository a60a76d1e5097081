/**
 * A setting the gateway cannot start with: thrown while the configuration is resolved, and by
 * whatever checks a configured value at start-up (a path that is not a file, a template that
 * cannot be served), always naming the variable to fix.
 *
 * @module
 */

/** Thrown when a variable holds a value the gateway cannot use. */
export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(message);
    this.name = "ConfigError";
  }
}
