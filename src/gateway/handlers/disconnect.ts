import type { Session } from '../session.js';

/** DISCONNECT: the device leaves on purpose, so its will is dropped unpublished [MQTT-3.14.4-3]. */
export function disconnect(s: Session): void {
  s.will = null;
  s.destroy();
}
