/**
 * The device of the examples: a Wi-Fi lamp made with Skyport's device SDK (docs/sdk.md). It has a
 * function `led` ("on" or "off", answers 1 or 0), a variable `led` (whether it is on) and a
 * variable `temp` (°C). In a real product this is the firmware.
 */
import { createDevice, type Device } from 'skyport/device';
import type { DeviceIdentity } from './owner.js';

export interface Lamp {
  readonly id: string;
  /** Whether the lamp is on: what the function calls changed on the device itself. */
  readonly on: boolean;
  readonly device: Device;
  /**
   * Device setup (simple and two-legged designs): what the phone sends the device over the
   * device's own Wi-Fi access point (the claim code; the Wi-Fi credentials are left out here).
   * Once online, the device presents the code to the cloud and belongs to whoever asked for it.
   */
  setup(claimCode: string): Promise<void>;
  close(): Promise<void>;
}

/** Connects a lamp with its identity; resolves once it is online and has described itself. */
export async function startLamp(mqttUrl: string, identity: DeviceIdentity): Promise<Lamp> {
  let on = false;
  const device = createDevice({ url: mqttUrl, id: identity.id, secret: identity.secret, reconnect: { minMs: 100, maxMs: 2000 } });
  device
    .function('led', (arg) => {
      if (arg !== 'on' && arg !== 'off') throw new Error('say "on" or "off"');
      on = arg === 'on';
      return on ? 1 : 0;
    })
    .variable('led', 'bool', () => on)
    .variable('temp', 'double', () => 21.5);
  // Network failures are reported on each retry; say each different one once.
  let last = '';
  device.on('error', (err: Error) => {
    if (err.message !== last) console.error(`lamp ${identity.id}: ${err.message}`);
    last = err.message;
  });
  await device.connect({ timeoutMs: 10_000 });
  return {
    id: identity.id,
    get on() { return on; },
    device,
    setup: (claimCode) => device.claim(claimCode),
    close: () => device.close(),
  };
}
