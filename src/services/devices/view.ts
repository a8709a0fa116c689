import { Type, type Static, type TInteger, type TString } from '@sinclair/typebox';
import type { ListedDevice } from '../../repositories/devices.repository.js';
import type { OwnerNames } from './owner-names.js';

const S = Type.String();
const N = Type.Null();
/**
 * The type or null, as OpenAPI 3.0's `nullable`: the response serializer writes it directly,
 * where for an `anyOf` it tries each branch of every field (a fleet page serialised in about half
 * the time).
 */
const orNull = <T extends TString | TInteger>(t: T) => Type.Unsafe<Static<T> | null>({ ...t, nullable: true });

/**
 * A device as the API shows it, the fields of Particle's device detail (docs/api.md, "Devices"):
 * real values where the cloud knows them, null where not. It serialises every device answer
 * (schema `Device`) and is the type the views are built as.
 */
export const DeviceViewSchema = Type.Object({
  id: S, name: orNull(S), last_app: N, last_ip_address: orNull(S), last_heard: orNull(S), last_handshake_at: orNull(S),
  product_id: Type.Integer(), online: Type.Boolean(), connected: Type.Boolean(), platform_id: Type.Integer(), cellular: Type.Boolean(),
  notes: orNull(S), functions: Type.Array(S), variables: Type.Record(S, S), status: S, serial_number: orNull(S),
  iccid: N, imei: N, mac_wifi: N, mobile_secret: N, system_firmware_version: orNull(S), firmware_version: orNull(Type.Integer()),
  firmware_product_id: orNull(Type.Integer()), current_build_target: orNull(S), default_build_target: orNull(S),
  targeted_firmware_release_version: orNull(Type.Integer()), desired_firmware_version: orNull(Type.Integer()),
  firmware_updates_enabled: Type.Boolean(), firmware_updates_forced: Type.Boolean(), development: Type.Boolean(),
  quarantined: Type.Boolean(), denied: Type.Boolean(), groups: Type.Array(S), owner: orNull(S),
}, { $id: 'Device' });

export type DeviceView = Static<typeof DeviceViewSchema>;

const iso = (x: Date | null) => (x === null ? null : x.toISOString());

/** What a view shows of a product device's firmware: its groups and the version it is targeted with (docs/firmware.md). */
export interface FirmwareFacts { groups: string[]; target: number | null }

/** Reads the firmware facts of many devices at once (services/firmware/targets.ts, `describe`). */
export type DescribeFirmware = (devices: readonly ListedDevice[]) => Promise<ReadonlyMap<string, FirmwareFacts>>;

/** A device's view, its owner shown by name (a username or a customer's e-mail). */
export function deviceView(d: ListedDevice, owner: string | null, firmware?: FirmwareFacts): DeviceView {
  return {
    id: d.id,
    name: d.name,
    last_app: null,
    last_ip_address: d.lastIpAddress,
    last_heard: iso(d.lastHeard),
    last_handshake_at: iso(d.lastHandshakeAt),
    // Outside a product, product_id is the platform id, as Particle's device detail has it.
    product_id: d.productId ?? d.platformId,
    online: d.online,
    connected: d.online,
    platform_id: d.platformId,
    cellular: false,
    notes: d.notes,
    functions: d.functions,
    variables: d.variables,
    status: 'normal',
    serial_number: d.serialNumber,
    iccid: null,
    imei: null,
    mac_wifi: null,
    mobile_secret: null,
    system_firmware_version: d.systemFirmwareVersion,
    firmware_version: d.firmwareVersion,
    firmware_product_id: d.productId,
    current_build_target: d.systemFirmwareVersion,
    default_build_target: null,
    targeted_firmware_release_version: firmware?.target ?? null,
    desired_firmware_version: d.desiredFirmwareVersion,
    firmware_updates_enabled: d.firmwareUpdatesEnabled,
    firmware_updates_forced: d.firmwareUpdatesForced,
    development: d.development,
    quarantined: false,
    denied: false,
    groups: firmware?.groups ?? [],
    owner,
  };
}

/** Views of devices with their owners' names and their firmware facts, each read once for a whole list. */
export function createDeviceViews(deps: { ownerNames: OwnerNames; firmware?: DescribeFirmware }) {
  async function page(devices: ListedDevice[]): Promise<{ devices: DeviceView[]; customers: Array<{ id: string; username: string }> }> {
    const [names, firmware] = await Promise.all([deps.ownerNames.of(devices), deps.firmware?.(devices)]);
    const nameOf = (d: ListedDevice) => (d.owner ? names.get(`${d.owner.kind}:${d.owner.id}`) ?? null : null);
    const customers = [...names].flatMap(([key, username]) => (key.startsWith('customer:') ? [{ id: key.slice('customer:'.length), username }] : []));
    return { devices: devices.map((d) => deviceView(d, nameOf(d), firmware?.get(d.id))), customers };
  }
  const views = async (devices: ListedDevice[]): Promise<DeviceView[]> => (await page(devices)).devices;
  return {
    views,
    view: async (d: ListedDevice): Promise<DeviceView> => (await views([d]))[0] as DeviceView,
    /** The devices, and the customers among their owners (a fleet page lists both). */
    page,
  };
}

export type DeviceViews = ReturnType<typeof createDeviceViews>;
