import type { Clock } from './clock.js';
import type { Log } from './log.js';
import { TtlCache, type CacheChannel } from './ttl-cache.js';

/**
 * Caches whose drops reach every node (docs/architecture.md, "Caches in a cluster"). Each node
 * keeps its own copies (tokens, clients, accounts, devices, team access); a write drops the copy
 * of the node that made it once it has committed, and the hub announces that drop on the bus, so
 * that every other node drops its copy too, within the bus's latency rather than the cache's
 * lifetime. Drops of one turn of the event loop travel as one notice (a reconnect storm's
 * presence writes are thousands of device ids at once), at most `maxKeysPerNotice` keys each.
 */

/** The part of the bus the hub uses (bus/bus.ts): node-to-node notices and whether they get through. */
export interface NoticeBus {
  readonly nodeId: string;
  notify(topic: string, payload: unknown): void;
  listen(topic: string, listener: (payload: unknown) => void): () => void;
  state(): 'up' | 'down';
}

export interface CacheOptions {
  maxEntries?: number;
  /**
   * Called when another node's notice dropped `key` here (`null`: everything), for a cache
   * that keeps its own bookkeeping of reads in flight (devices.cache.ts's stale marks).
   */
  dropped?: (key: string | null) => void;
}

export interface CacheHub {
  /** A cache whose `delete` and `clear` reach the cache of the same name on every node. */
  cache<V>(name: string, ttlMs: number, options?: CacheOptions): TtlCache<V>;
  /** Sends what is still queued and stops listening. */
  close(): void;
}

/** The topic of cache notices; a notice is `{ from: nodeId, seq, drops: { [cache]: keys | '*' } }`. */
export const CACHE_TOPIC = 'cache';

interface CacheNotice {
  from: string;
  /** Counts the sender's notices, so that a receiver can tell it missed some. */
  seq: number;
  drops: Record<string, string[] | '*'>;
}

/** Caches of one process that tells nobody: a single node, or tests of a single part. */
export function localCaches(clock: Clock): CacheHub {
  return {
    cache: <V>(_name: string, ttlMs: number, options: CacheOptions = {}) => new TtlCache<V>(clock, ttlMs, options.maxEntries),
    close: () => undefined,
  };
}

export function createCacheHub(bus: NoticeBus, clock: Clock, options: { log?: () => Log; maxKeysPerNotice?: number; checkMs?: number } = {}): CacheHub {
  const maxKeys = options.maxKeysPerNotice ?? 1000;
  /** What each named cache does with another node's drop. */
  const locals = new Map<string, { drop(key: string): void; dropAll(): void }>();
  let pending = new Map<string, Set<string> | '*'>();
  let scheduled: NodeJS.Immediate | undefined;
  let closed = false;
  let sent = 0;
  /** The last notice received from each other node. */
  const heard = new Map<string, number>();
  const dropEverything = () => { for (const local of locals.values()) local.dropAll(); };

  function queue(name: string, key: string | '*'): void {
    if (closed) return;
    const keys = pending.get(name);
    if (keys === '*') return;
    if (key === '*') pending.set(name, '*');
    else if (keys) keys.add(key);
    else pending.set(name, new Set([key]));
    scheduled ??= setImmediate(flush);
  }

  function flush(): void {
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    const batch = pending;
    pending = new Map();
    let drops: CacheNotice['drops'] = {};
    let size = 0;
    const send = () => {
      if (size === 0) return;
      // Numbered before it is sent: a notice that fails to go shows as a gap to the other nodes.
      sent += 1;
      try {
        bus.notify(CACHE_TOPIC, { from: bus.nodeId, seq: sent, drops } satisfies CacheNotice);
      } catch (err) {
        options.log?.().warn({ err }, 'cache notice not sent: other nodes keep their copies until they expire');
      }
      drops = {};
      size = 0;
    };
    for (const [name, keys] of batch) {
      if (keys === '*') {
        if (size >= maxKeys) send();
        drops[name] = '*';
        size += 1;
        continue;
      }
      for (const key of keys) {
        if (size >= maxKeys) send();
        const list = drops[name];
        if (Array.isArray(list)) list.push(key);
        else drops[name] = [key];
        size += 1;
      }
    }
    send();
  }

  // Every node receives its own notices too (bus.ts, `notify`): those were dropped already.
  const unlisten = bus.listen(CACHE_TOPIC, (payload) => {
    const notice = payload as Partial<CacheNotice> | null;
    if (typeof notice?.from !== 'string' || typeof notice.seq !== 'number' || typeof notice.drops !== 'object' || notice.drops === null) throw new Error('malformed cache notice');
    if (notice.from === bus.nodeId) return;
    // A gap: notices of that node were lost on the way (this node was cut off, or too slow to
    // take them), and what they dropped is unknown. A lower number is the node restarted.
    const last = heard.get(notice.from);
    heard.set(notice.from, notice.seq);
    if (last !== undefined && notice.seq > last + 1) {
      dropEverything();
      return;
    }
    for (const [name, keys] of Object.entries(notice.drops)) {
      // A cache this node does not have (another version) has nothing to drop.
      const local = locals.get(name);
      if (!local) continue;
      if (keys === '*') local.dropAll();
      else if (Array.isArray(keys)) for (const key of keys) if (typeof key === 'string') local.drop(key);
    }
  });

  // A node cut off from the bus misses the notices sent meanwhile: it drops everything while it
  // is cut off, and once more when it is back (a gap in a node's numbers, above, catches the
  // outages too short for this check to see, at that node's next notice).
  let wasUp = bus.state() === 'up';
  const watch = setInterval(() => {
    const up = bus.state() === 'up';
    if (!up || !wasUp) dropEverything();
    wasUp = up;
  }, options.checkMs ?? 1000);
  watch.unref();

  return {
    cache<V>(name: string, ttlMs: number, cacheOptions: CacheOptions = {}): TtlCache<V> {
      if (locals.has(name)) throw new Error(`the cache ${name} is made twice`);
      const channel: CacheChannel = { deleted: (key) => queue(name, key), cleared: () => queue(name, '*') };
      const cache = new TtlCache<V>(clock, ttlMs, cacheOptions.maxEntries, channel);
      const { dropped } = cacheOptions;
      locals.set(name, {
        drop(key) {
          cache.drop(key);
          dropped?.(key);
        },
        dropAll() {
          cache.dropAll();
          dropped?.(null);
        },
      });
      return cache;
    },
    close() {
      if (closed) return;
      flush();
      closed = true;
      clearInterval(watch);
      unlisten();
    },
  };
}
