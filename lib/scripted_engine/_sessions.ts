/**
 * SGLang's engine sessions as the scripted engine keeps them (`session/session_controller.py`,
 * non-streaming sessions): `/open_session` opens one by id (a taken id fails), a `/generate` with
 * `session_params: {id, rid}` is built as the request `rid`'s input + its output + the ids sent
 * (no `rid`: the ids sent alone, a new root), and is aborted when the session is unknown, the
 * `rid` unknown, or that request unfinished; `/close_session` forgets it; an idle session past its
 * `timeout` (seconds) is closed. Unlike SGLang, which keeps a session's whole request tree, a
 * session here keeps its last {@linkcode NODES_KEPT} requests: a continuation from an older one
 * is refused as an unknown `rid` is.
 *
 * @module
 */

/** Requests a session keeps to continue from. */
export const NODES_KEPT = 8;

/** Sessions kept at once; opening one more is refused, as an engine out of memory would. */
export const SESSIONS_KEPT = 100_000;

/** One request of a session: its whole input, and its output once finished. */
interface SessionNode {
  readonly input: readonly number[];
  output: readonly number[] | null;
}

interface Session {
  readonly nodes: Map<string, SessionNode>;
  /** Idle seconds after which it is closed; `null`: never. */
  readonly timeoutS: number | null;
  lastActive: number;
}

/** The `session_params` of a request. */
export interface SessionParams {
  readonly id: string;
  readonly rid: string | null;
}

/** The open sessions of one scripted engine. */
export class ScriptedSessions {
  readonly #sessions = new Map<string, Session>();
  /** Every session ever opened, and every one closed, in order (unless no log is kept). */
  readonly opened: string[] = [];
  readonly closed: string[] = [];
  #reapedAt = -Infinity;

  constructor(
    readonly keepLog = true,
    readonly now: () => number = () => performance.now(),
  ) {}

  /** Sessions open now. */
  get size(): number {
    this.#reap();
    return this.#sessions.size;
  }

  /** Opens `id`; `false` when it is taken (or none was named, or too many are open). */
  open(id: unknown, timeoutS: unknown): boolean {
    this.#reap();
    if (typeof id !== "string" || id === "" || this.#sessions.has(id)) return false;
    if (this.#sessions.size >= SESSIONS_KEPT) return false;
    const timeout = typeof timeoutS === "number" && timeoutS > 0 ? timeoutS : null;
    this.#sessions.set(id, { nodes: new Map(), timeoutS: timeout, lastActive: this.now() });
    if (this.keepLog) this.opened.push(id);
    return true;
  }

  close(id: string): void {
    if (this.#sessions.delete(id) && this.keepLog) this.closed.push(id);
  }

  /** Forgets every session (the engine restarted). */
  clear(): void {
    this.#sessions.clear();
  }

  /**
   * The whole input of request `rid` sent `ids` with `params`, registered as the session's node;
   * or why the engine aborts it.
   */
  begin(
    params: SessionParams,
    rid: string,
    ids: readonly number[],
  ): { readonly input: readonly number[] } | { readonly abort: string } {
    this.#reap();
    const session = this.#sessions.get(params.id);
    if (!session) return { abort: `Invalid request: session id ${params.id} does not exist` };
    let input = ids;
    if (params.rid !== null) {
      const parent = session.nodes.get(params.rid);
      if (!parent) return { abort: "Invalid request session id" };
      if (parent.output === null) {
        return { abort: "Session request is appending to a request that hasn't finished." };
      }
      input = [...parent.input, ...parent.output, ...ids];
    }
    session.lastActive = this.now();
    session.nodes.set(rid, { input, output: null });
    if (session.nodes.size > NODES_KEPT) session.nodes.delete(session.nodes.keys().next().value!);
    return { input };
  }

  /** Request `rid` of session `id` finished with `output`. */
  finish(id: string, rid: string, output: readonly number[]): void {
    const node = this.#sessions.get(id)?.nodes.get(rid);
    if (node) node.output = output;
  }

  /** Closes sessions idle past their timeout, at most once a second (as SGLang reaps). */
  #reap(): void {
    const now = this.now();
    if (now - this.#reapedAt < 1000) return;
    this.#reapedAt = now;
    for (const [id, session] of this.#sessions) {
      if (session.timeoutS !== null && now - session.lastActive > session.timeoutS * 1000) {
        this.close(id);
      }
    }
  }
}
