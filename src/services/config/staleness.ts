/**
 * What a newer write or another delivery has made out of date in prepared delivery work.
 *
 * Delivery prepares work from reads (a fan-out reads the whole fleet's configuration and what
 * each device holds once; a batch of connecting devices reads theirs together) and runs it later,
 * in each device's turn. In between, two things can change what was read:
 * - a write commits: the values read are older than what is committed, and sent as read they
 *   could leave a device on the older value after the newer one;
 * - another delivery to the device runs: what the device holds is no longer what was read.
 * Each such event is noted with the next number of a counter of this node; work takes a
 * snapshot of the counter before it reads and asks, in each device's turn, whether an event
 * concerning the device was noted since. The answer errs one way only: an event noted after the
 * read began may already be in what was read, and the work is then redone or dropped, never sent
 * stale. Notes are kept only while some snapshot is open.
 */
export function createStalenessLedger() {
  let counter = 0;
  let open = 0;
  const fleets = new Map<number, number>();
  const devices = new Map<string, number>();
  const deliveries = new Map<string, number>();
  const note = <K>(map: Map<K, number>, key: K) => {
    // With no snapshot open, nothing prepared can be out of date by it.
    if (open > 0) map.set(key, ++counter);
  };
  return {
    /** A write that concerns a product's whole fleet (its values, its schema) has committed. */
    fleetWritten: (productId: number): void => note(fleets, productId),
    /** A write of one device's own values has committed. */
    deviceWritten: (deviceId: string): void => note(devices, deviceId),
    /** A delivery to the device has ended (what it holds may have changed). */
    delivered: (deviceId: string): void => note(deliveries, deviceId),

    /** Taken before the reads that work is prepared from; `done` once its last device turn ran. */
    snapshot() {
      const at = counter;
      open += 1;
      let closed = false;
      return {
        /** A write concerning the device committed since: the values read may be out of date. */
        superseded: (productId: number, deviceId: string): boolean => (fleets.get(productId) ?? 0) > at || (devices.get(deviceId) ?? 0) > at,
        /** Another delivery to the device ran since: what it holds may not be what was read. */
        deliveredTo: (deviceId: string): boolean => (deliveries.get(deviceId) ?? 0) > at,
        done(): void {
          if (closed) return;
          closed = true;
          open -= 1;
          if (open === 0) {
            fleets.clear();
            devices.clear();
            deliveries.clear();
          }
        },
      };
    },
  };
}

export type StalenessLedger = ReturnType<typeof createStalenessLedger>;
export type Snapshot = ReturnType<StalenessLedger['snapshot']>;
