import type { DeviceAnswer } from '../bus/bus.js';
import { DomainError } from '../domain/errors.js';

/** The requests that wait for a device's answer. */
export type PendingKind = 'call' | 'get' | 'config';

/** The device → cloud topics that carry answers (docs/device-protocol.md, "Topics"). */
export type AnswerTopic = 'reply' | 'config/ack';

/**
 * Which topic answers which kind of request: `reply` answers function calls and variable reads,
 * `config/ack` a configuration module. An answer on the other topic settles nothing, so a
 * device's `config/ack` can never stand for a function's return value, nor a reply for an
 * acknowledgement.
 */
const ANSWERED_ON: Readonly<Record<PendingKind, AnswerTopic>> = { call: 'reply', get: 'reply', config: 'config/ack' };

/** Requests one device may have waiting at once. */
export const MAX_PENDING = 32;

interface Pending {
  kind: PendingKind;
  resolve(answer: DeviceAnswer): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

/** One connection's requests that wait for the device's answer, by correlation id. */
export class PendingCalls {
  private readonly byId = new Map<string, Pending>();

  get size(): number {
    return this.byId.size;
  }

  /** Waits for the answer to request `id`; rejects `device_timeout` after `timeoutMs`. */
  open(id: string, kind: PendingKind, timeoutMs: number): Promise<DeviceAnswer> {
    return new Promise<DeviceAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.byId.delete(id);
        reject(new DomainError('device_timeout', `The device did not answer within ${Math.round(timeoutMs / 100) / 10} s`));
      }, timeoutMs);
      this.byId.set(id, { kind, resolve, reject, timer });
    });
  }

  /**
   * Settles request `id` with an answer that arrived on `topic`. An answer that is late, names
   * an id nobody waits for, or came on the topic of another kind of request is dropped
   * (docs/device-protocol.md, "Function calls"); the request keeps waiting.
   */
  settle(id: string, topic: AnswerTopic, answer: DeviceAnswer): boolean {
    const waiting = this.byId.get(id);
    if (!waiting || ANSWERED_ON[waiting.kind] !== topic) return false;
    this.byId.delete(id);
    clearTimeout(waiting.timer);
    waiting.resolve(answer);
    return true;
  }

  /** The connection ended: every request fails `device_offline`. */
  abandon(): void {
    for (const waiting of this.byId.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(new DomainError('device_offline', 'The device disconnected before it answered'));
    }
    this.byId.clear();
  }
}
