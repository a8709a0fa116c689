/** Messages between the embedded store (embedded.ts) and its thread (embedded-worker.ts). */
export type EmbeddedRequest =
  | { id: number; op: 'query'; sql: string; params?: readonly unknown[] | undefined; tx?: number | undefined }
  | { id: number; op: 'exec'; sql: string; tx?: number | undefined }
  /** Answers a transaction id once the transaction holds the connection. */
  | { id: number; op: 'begin' }
  /** Commits or rolls back; answers whether it committed. */
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'close' };

export interface EmbeddedError { message: string; code?: string; detail?: string; constraint?: string; table?: string; column?: string; severity?: string }

export type EmbeddedReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: EmbeddedError };

/** Something the thread did on its own that went wrong (maintenance); the store goes on. */
export interface EmbeddedWarning { warning: string }
