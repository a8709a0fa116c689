import { DomainError } from '../domain/errors.js';
import type { Bus, CloudEvent, DeviceHandler } from './bus.js';

/** The single-process bus: the API and the gateway share a table of connected devices. */
export function createInProcessBus(): Bus {
  const held = new Map<string, DeviceHandler>();
  const listeners = new Set<(event: CloudEvent) => void>();

  return {
    async send(deviceId, command, timeoutMs) {
      const handler = held.get(deviceId);
      if (!handler) throw new DomainError('device_offline', 'The device is not connected to the cloud');
      return handler(command, timeoutMs);
    },
    hold(deviceId, handler) {
      held.set(deviceId, handler);
      return () => {
        if (held.get(deviceId) === handler) held.delete(deviceId);
      };
    },
    isConnected: async (deviceId) => held.has(deviceId),
    publish(event) {
      for (const listener of listeners) {
        try {
          listener(event);
        } catch {
          // One failing subscriber must not stop delivery to the others.
        }
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      held.clear();
      listeners.clear();
    },
  };
}
