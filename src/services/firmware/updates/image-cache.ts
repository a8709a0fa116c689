import { createHash } from 'node:crypto';

/** An image held for transfers: the bytes once, and their SHA-256 (hex), taken once. */
export interface HeldImage {
  readonly bytes: Buffer;
  readonly sha256: string;
  /** The transfer is done with it; an image nobody uses may be dropped. */
  release(): void;
}

interface Entry {
  loading: Promise<{ bytes: Buffer; sha256: string }>;
  users: number;
  size: number;
  lastUsed: number;
}

/**
 * The images this node sends, each held once however many devices take it: every transfer of a
 * product's version gets the same Buffer, and each chunk it sends is a view into it (subarray),
 * never a copy. Images in use stay; those nobody uses stay too, the most recently used first,
 * while they fit in `maxIdleBytes` (a release goes to many devices over time). Loads of one image
 * that overlap read it once.
 */
export function createImageCache(deps: { load(productId: number, version: number): Promise<Buffer>; maxIdleBytes: number }) {
  const entries = new Map<string, Entry>();
  let uses = 0;

  function trim(): void {
    const idle = [...entries].filter(([, e]) => e.users === 0).sort(([, a], [, b]) => b.lastUsed - a.lastUsed);
    let kept = 0;
    for (const [key, e] of idle) {
      kept += e.size;
      if (kept > deps.maxIdleBytes) entries.delete(key);
    }
  }

  return {
    async acquire(productId: number, version: number): Promise<HeldImage> {
      const key = `${productId}/${version}`;
      let entry = entries.get(key);
      if (!entry) {
        const loading = deps.load(productId, version).then((bytes) => ({ bytes, sha256: createHash('sha256').update(bytes).digest('hex') }));
        entry = { loading, users: 0, size: 0, lastUsed: 0 };
        entries.set(key, entry);
        // A load that failed is not kept: the next transfer reads again.
        loading.catch(() => { if (entries.get(key) === entry) entries.delete(key); });
      }
      const e = entry;
      e.users += 1;
      e.lastUsed = ++uses;
      let image: { bytes: Buffer; sha256: string };
      try {
        image = await e.loading;
      } catch (err) {
        e.users -= 1;
        throw err;
      }
      e.size = image.bytes.length;
      let released = false;
      return {
        bytes: image.bytes,
        sha256: image.sha256,
        release() {
          if (released) return;
          released = true;
          e.users -= 1;
          if (e.users === 0) trim();
        },
      };
    },

    /** Drops an image (it did not have its release's SHA-256): the next transfer reads it again. */
    forget(productId: number, version: number): void {
      entries.delete(`${productId}/${version}`);
    },

    /** Images held now, in use or idle, and their bytes. */
    held(): { images: number; bytes: number } {
      let bytes = 0;
      for (const e of entries.values()) bytes += e.size;
      return { images: entries.size, bytes };
    },
  };
}

export type ImageCache = ReturnType<typeof createImageCache>;
