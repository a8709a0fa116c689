import type { DeviceAnswer } from '../bus/bus.js';
import { DomainError } from '../domain/errors.js';

/** Requests one device may have waiting at once. */
export const MAX_PENDING = 32;

interface Pending {
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
  open(id: string, timeoutMs: number): Promise<DeviceAnswer> {
    return new Promise<DeviceAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.byId.delete(id);
        reject(new DomainError('device_timeout', `The device did not answer within ${Math.round(timeoutMs / 100) / 10} s`));
      }, timeoutMs);
      this.byId.set(id, { resolve, reject, timer });
    });
  }

  /**
   * Settles request `id`. An answer that is late or names an id nobody waits for is dropped
   * (docs/device-protocol.md, "Function calls").
   */
  settle(id: string, answer: DeviceAnswer): boolean {
    const waiting = this.byId.get(id);
    if (!waiting) return false;
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
