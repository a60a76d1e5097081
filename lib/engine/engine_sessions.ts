/**
 * SGLang engine sessions, one per chain (`ENGINE_SESSIONS=true`; reference
 * engines-vllm-sglang.md, SGLang's `session/session_controller.py`): the engine keeps a chain's
 * requests, and a request naming the last one in `session_params: {id, rid}` carries only the
 * tokens after that request's input and output, so the body to the engine is O(new tokens).
 *
 * A chain's session is opened on first use (`POST /open_session` with the chain's id, an idle
 * timeout as a backstop), closed when the chain can no longer continue (`release`), and dropped
 * least recently used past {@linkcode SESSIONS_KEPT}. A session id already open (another gateway
 * process opened it for the same chain) is used as is. An engine without sessions (404) is asked
 * no more.
 *
 * @module
 */
import type { EngineHttp } from "./engine_http.ts";

/** Engine sessions a client keeps open; the least recently used is closed past it. */
export const SESSIONS_KEPT = 16_384;

/** The request a chain's next turn may continue from. */
export interface SessionNode {
  /** The engine request id of the turn's last call. */
  readonly rid: string;
  /** The turn it was (its first request id): the next turn must extend this one. */
  readonly turn: string;
  /** Tokens of that request's prompt and output: what the engine holds for it. */
  readonly length: number;
}

/** One chain's engine session. */
export interface EngineSession {
  readonly id: string;
  readonly chain: string;
  /** Its last finished request, when the next turn may continue from it. */
  node: SessionNode | null;
  /** Settles once the engine has it open (`false`: it could not be opened). */
  opened: Promise<boolean>;
}

/** The engine session id of chain `chain`. */
export function sessionId(chain: string): string {
  return `rg-${chain}`;
}

/** The engine sessions of one engine (one worker). */
export class EngineSessions {
  readonly #sessions = new Map<string, EngineSession>();
  /** The engine has no sessions (404 at `/open_session`), or reports no prompt length to check. */
  #unsupported = false;
  /** Closes told and not yet answered. */
  readonly #closing = new Set<Promise<void>>();

  constructor(
    readonly http: Pick<EngineHttp, "tell" | "ask">,
    readonly options: { readonly idleS: number; readonly capacity: number },
  ) {}

  /** Chain `chain`'s open session, opened now if it has none; `null` when the engine has none. */
  async of(chain: string): Promise<EngineSession | null> {
    if (this.#unsupported) return null;
    let session = this.#sessions.get(chain);
    if (session) {
      this.#sessions.delete(chain);
      this.#sessions.set(chain, session);
    } else {
      session = { id: sessionId(chain), chain, node: null, opened: Promise.resolve(false) };
      session.opened = this.#open(session.id);
      this.#sessions.set(chain, session);
      if (this.#sessions.size > SESSIONS_KEPT) {
        this.close([this.#sessions.keys().next().value!]);
      }
    }
    if (await session.opened) return session;
    // Not opened: asked again at the chain's next turn.
    if (this.#sessions.get(chain) === session) this.#sessions.delete(chain);
    return null;
  }

  /** Uses no sessions on this engine from now on (it cannot be checked); closes those open. */
  disable(): void {
    this.#unsupported = true;
    this.close([...this.#sessions.keys()]);
  }

  /** Opens `session` again (the engine lost it, or built a prompt unlike the chain's). */
  reopen(session: EngineSession): void {
    session.node = null;
    session.opened = this.#open(session.id);
  }

  /** Closes the sessions of `chains` on the engine, best effort. */
  close(chains: readonly string[]): void {
    for (const chain of chains) {
      const session = this.#sessions.get(chain);
      if (!session) continue;
      this.#sessions.delete(chain);
      const closing = session.opened.then(async (opened) => {
        if (opened) await this.http.tell("/close_session", { session_id: session.id });
      });
      this.#closing.add(closing);
      void closing.then(() => this.#closing.delete(closing));
    }
  }

  /** Settles once every close told so far has been answered (or failed). */
  async settled(): Promise<void> {
    await Promise.all(this.#closing);
  }

  /** Opens session `id`: `true` once open, or already open (another process's, same chain). */
  async #open(id: string): Promise<boolean> {
    try {
      const { status, text } = await this.http.ask("/open_session", {
        capacity_of_str_len: this.options.capacity,
        session_id: id,
        timeout: this.options.idleS,
      });
      if (status === 404) this.#unsupported = true;
      if (status < 300) return true;
      return /already|still open/i.test(text);
    } catch {
      return false;
    }
  }
}
