/** Messages between the embedded store (embedded.ts) and its thread (embedded-worker.ts). */
export type EmbeddedRequest =
  /**
   * PostgreSQL protocol messages (wire.ts) to run outside any transaction, or inside the open
   * transaction `tx`; answers PostgreSQL's reply as bytes, errors included. A message of the
   * named statement `statement` starts with its Parse, which the thread sends only once.
   */
  | { id: number; op: 'run'; message: Uint8Array; tx?: number | undefined; statement?: string | undefined }
  /** Answers a transaction id once the transaction holds the session. */
  | { id: number; op: 'begin' }
  /** Commits or rolls back; answers whether it committed. */
  | { id: number; op: 'end'; tx: number; commit: boolean }
  /** Answers the whole data directory as a tarball (PGlite's dumpDataDir), for a `template`. */
  | { id: number; op: 'dump' }
  | { id: number; op: 'close' };

export interface EmbeddedError { message: string; code?: string; detail?: string; constraint?: string; table?: string; column?: string; severity?: string }

export type EmbeddedReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: EmbeddedError };

/** Something the thread did on its own that went wrong (maintenance); the store goes on. */
export interface EmbeddedWarning { warning: string }
/** The thread's compiled PostgreSQL, sent once, for the threads started after it (embedded.ts). */
export interface EmbeddedCompiled { compiled: WebAssembly.Module }
