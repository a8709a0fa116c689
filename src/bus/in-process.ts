import { systemClock, type Clock } from '../platform/clock.js';
import { deviceOffline, type Bus, type CloudEvent, type DeviceHandler } from './bus.js';
import { memoryTables } from './shared.js';

/** Calls each listener; one failing listener must not stop delivery to the others. */
export function fanOutTo<T>(listeners: Iterable<(value: T) => void>, value: T): void {
  for (const listener of listeners) {
    try {
      listener(value);
    } catch {
      // Listeners log their own failures.
    }
  }
}

/** The single-process bus: the API and the gateway share a table of connected devices. */
export function createInProcessBus(clock: Clock = systemClock): Bus {
  const held = new Map<string, DeviceHandler>();
  const listeners = new Set<(event: CloudEvent) => void>();
  const topics = new Map<string, Set<(payload: unknown) => void>>();

  return {
    nodeId: 'local',
    shared: memoryTables(clock),
    state: () => 'up',
    whenBack: () => () => undefined,
    async send(deviceId, command, timeoutMs) {
      const handler = held.get(deviceId);
      if (!handler) throw deviceOffline();
      return handler(command, timeoutMs);
    },
    // The gateway replaces an older connection of the device itself: nothing to evict here.
    hold(deviceId, handler) {
      held.set(deviceId, handler);
      return () => {
        if (held.get(deviceId) === handler) held.delete(deviceId);
      };
    },
    isConnected: async (deviceId) => held.has(deviceId),
    publish: (event) => fanOutTo(listeners, event),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    notify: (topic, payload) => fanOutTo(topics.get(topic) ?? [], payload),
    listen(topic, listener) {
      const set = topics.get(topic) ?? new Set();
      topics.set(topic, set.add(listener));
      return () => set.delete(listener);
    },
    async close() {
      held.clear();
      listeners.clear();
      topics.clear();
    },
  };
}
