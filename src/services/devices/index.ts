import type { DeviceAccess } from './access.js';
import type { DeviceEdits } from './edit.js';
import type { DeviceLists } from './lists.js';
import type { FleetMembership } from './membership.js';
import type { Ownership } from './ownership.js';
import type { Provisioning } from './provisioning.js';
import type { DeviceViews } from './view.js';

/** The device modules the REST routes use, one concern each (wired in main.ts). */
export interface Devices {
  access: DeviceAccess;
  views: DeviceViews;
  lists: DeviceLists;
  provisioning: Provisioning;
  membership: FleetMembership;
  ownership: Ownership;
  edits: DeviceEdits;
}
