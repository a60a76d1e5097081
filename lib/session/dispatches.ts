/**
 * Sub-agents by the tool call that dispatched them, so the engine can let a sub-agent's chain go
 * (its engine session, its placement) once the parent reads that call's result: the sub-agent has
 * reported and will not continue. Kept in this process, at most {@linkcode DISPATCHES_KEPT} (the
 * oldest forgotten: that sub-agent's engine session is closed by its idle timeout instead).
 *
 * @module
 */
import type { ChatMessage } from "../chat/mod.ts";

/** Sub-agents remembered at once. */
export const DISPATCHES_KEPT = 65_536;

/** Sub-agent chains by session and dispatching call. */
export class Dispatches {
  /** `<session> <call id>` → the sub-agent's chain (as the engine names it). */
  readonly #chains = new Map<string, string>();

  constructor(readonly capacity = DISPATCHES_KEPT) {}

  /** Sub-agents remembered now. */
  get size(): number {
    return this.#chains.size;
  }

  /** Call `dispatch` of session `sessionId` started sub-agent `chain`. */
  add(sessionId: string, dispatch: string, chain: string): void {
    this.#chains.set(`${sessionId} ${dispatch}`, chain);
    if (this.#chains.size > this.capacity) this.#chains.delete(this.#chains.keys().next().value!);
  }

  /** The sub-agents whose dispatching calls `messages` answer (tool results), forgotten now. */
  answered(sessionId: string, messages: readonly ChatMessage[]): string[] {
    if (this.#chains.size === 0) return [];
    const finished: string[] = [];
    for (const message of messages) {
      if (message.role !== "tool" || message.tool_call_id === undefined) continue;
      const key = `${sessionId} ${message.tool_call_id}`;
      const chain = this.#chains.get(key);
      if (chain === undefined) continue;
      this.#chains.delete(key);
      finished.push(chain);
    }
    return finished;
  }
}
