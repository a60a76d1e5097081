/**
 * A request the gateway understands but cannot serve as sent: every protocol's lowering and the
 * shared edge throw it, each protocol answers it in its own error envelope.
 *
 * @module
 */
import type { CodedError } from "./codes.ts";

/** A request the gateway understands but cannot serve as sent (HTTP 400). */
export class InvalidRequestError extends Error implements CodedError {
  readonly code = "invalid_request" as const;
  constructor(message: string) {
    super(message);
    this.name = "InvalidRequestError";
  }
}
