/**
 * What can refuse or end a turn, as the session layer reports it.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";

/** A client's id as an error message quotes it: whole up to 128 characters, else its first 64. */
function shown(id: string): string {
  return id.length > 128 ? `${id.slice(0, 64)}…` : id;
}

/** No token, or a token that does not open the session it names (HTTP 401). */
export class AuthenticationError extends Error implements CodedError {
  readonly code = "authentication" as const;
  constructor(message: string) {
    super(message);
    this.name = "AuthenticationError";
  }
}

/** A session id that is not letters, digits, `_` and `-`, up to 128 characters (HTTP 400). */
export class InvalidSessionIdError extends RangeError implements CodedError {
  readonly code = "invalid_session_id" as const;
  constructor(id: string) {
    super(
      `Invalid session id "${shown(id)}": use letters, digits, _ and -`,
    );
    this.name = "InvalidSessionIdError";
  }
}

/** No session with this id (HTTP 404). */
export class SessionNotFoundError extends Error implements CodedError {
  readonly code = "session_not_found" as const;
  constructor(readonly sessionId: string) {
    super(
      `Session "${shown(sessionId)}" not found`,
    );
    this.name = "SessionNotFoundError";
  }
}

/** A session has no chain of this id (HTTP 404). */
export class ChainNotFoundError extends Error implements CodedError {
  readonly code = "chain_not_found" as const;
  constructor(readonly sessionId: string, chainId: string) {
    super(
      `Session "${sessionId}" has no chain "${shown(chainId)}"`,
    );
    this.name = "ChainNotFoundError";
  }
}

/** A session holds no image of this digest (HTTP 404). */
export class ImageNotFoundError extends Error implements CodedError {
  readonly code = "image_not_found" as const;
  constructor(readonly sessionId: string, digest: string) {
    super(
      `Session "${sessionId}" has no image "${shown(digest)}"`,
    );
    this.name = "ImageNotFoundError";
  }
}

/** A session id is taken already (HTTP 409). */
export class SessionExistsError extends Error implements CodedError {
  readonly code = "session_exists" as const;
  constructor(readonly sessionId: string) {
    super(`Session "${sessionId}" already exists`);
    this.name = "SessionExistsError";
  }
}

/** The session no longer takes turns (HTTP 409). */
export class SessionClosedError extends Error implements CodedError {
  readonly code = "session_closed" as const;
  constructor(readonly sessionId: string) {
    super(`Session "${sessionId}" is closed`);
    this.name = "SessionClosedError";
  }
}

/** The prompt does not fit the context window (HTTP 400 in Anthropic's wording). */
export class ContextOverflowError extends Error implements CodedError {
  readonly code = "context_overflow" as const;
  /**
   * @param promptTokens the prompt's tokens; with `atLeast`, a count the prompt is known to
   *   exceed (encoding stopped as soon as it could not fit), shown as "more than N".
   */
  constructor(
    readonly promptTokens: number,
    readonly contextLength: number,
    readonly atLeast = false,
  ) {
    super(
      `prompt is too long: ${atLeast ? "more than " : ""}${promptTokens} tokens > ${
        contextLength - 1
      } maximum`,
    );
    this.name = "ContextOverflowError";
  }
}

/** The chain or the lease changed while this turn generated; nothing was recorded (HTTP 409). */
export class ChainConflictError extends Error implements CodedError {
  readonly code = "chain_conflict" as const;
  constructor(sessionId: string, chainId: string) {
    super(
      `Chain "${chainId}" of session "${sessionId}" changed during this turn; it was not recorded`,
    );
    this.name = "ChainConflictError";
  }
}
