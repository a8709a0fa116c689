/**
 * One delivery at a time per device: a fleet change and a connect (or a device write) at the
 * same moment would otherwise both send the same module. Work runs in the device's turn, after
 * whatever was queued for it before; `ended` is told when each turn ends.
 */
export function createDeviceTurns(ended: (deviceId: string) => void = () => undefined) {
  const chains = new Map<string, Promise<unknown>>();
  return {
    run<T>(deviceId: string, work: () => Promise<T>): Promise<T> {
      const result = (chains.get(deviceId) ?? Promise.resolve()).catch(() => undefined).then(work);
      const tail: Promise<unknown> = result.catch(() => undefined).finally(() => {
        ended(deviceId);
        if (chains.get(deviceId) === tail) chains.delete(deviceId);
      });
      chains.set(deviceId, tail);
      return result;
    },
    /** Devices with work running or queued. */
    get size(): number {
      return chains.size;
    },
  };
}
