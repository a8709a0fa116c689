/**
 * The default configuration schema of a tracker product
 * (docs/particle-compatibility.md#the-default-schema): the modules and keys of Particle's Tracker
 * Edge schema, in display order (a module's position in `properties` is its tab, a key's position
 * its row), with types, bounds, defaults, titles and descriptions. The version is the tag at the
 * end of `$id`, as in Particle's schemas; a newer default ships as a new version and never changes
 * a product's custom schema.
 */

export const DEFAULT_SCHEMA_VERSION = 19;
export const SCHEMA_ID_PREFIX = 'https://skyport.dev/schemas/tracker-config/v';

type Json = Record<string, unknown>;

interface LeafSpec {
  type: 'integer' | 'number' | 'boolean' | 'string';
  title: string;
  description: string;
  default: unknown;
  minimum?: number;
  maximum?: number;
  enum?: string[];
  minimumFirmwareVersion?: number;
}

function leaf(path: string, spec: LeafSpec): Json {
  const { minimumFirmwareVersion, ...rest } = spec;
  return {
    $id: `#/properties/${path}`,
    ...rest,
    examples: [spec.default],
    ...(minimumFirmwareVersion === undefined ? {} : { minimumFirmwareVersion }),
  };
}

function object(path: string, title: string, description: string, keys: Record<string, LeafSpec | Json>, extra: Json = {}): Json {
  const properties: Json = {};
  for (const [name, spec] of Object.entries(keys)) {
    properties[name] = 'properties' in spec ? spec : leaf(`${path}/properties/${name}`, spec as LeafSpec);
  }
  return { $id: `#/properties/${path}`, type: 'object', title, description, default: {}, ...extra, properties };
}

const bool = (title: string, description: string, dflt: boolean, minimumFirmwareVersion?: number): LeafSpec => ({
  type: 'boolean', title, description, default: dflt, ...(minimumFirmwareVersion === undefined ? {} : { minimumFirmwareVersion }),
});

function zone(n: number): Json {
  const path = `geofence/properties/zone${n}`;
  return object(path, `Zone ${n}`, `Geofence zone ${n}`, {
    enable: bool('Enable', `Evaluate zone ${n}`, false),
    shape_type: { type: 'string', title: 'Shape', description: 'Shape of the zone', enum: ['circular'], default: 'circular' },
    lat: { type: 'number', title: 'Latitude', description: 'Latitude of the centre, degrees', minimum: -90, maximum: 90, default: 0 },
    lon: { type: 'number', title: 'Longitude', description: 'Longitude of the centre, degrees', minimum: -180, maximum: 180, default: 0 },
    radius: { type: 'number', title: 'Radius', description: 'Radius of the zone, metres', minimum: 0, maximum: 100000, default: 0 },
    inside: bool('Publish inside', 'Publish while inside the zone', false),
    outside: bool('Publish outside', 'Publish while outside the zone', false),
    enter: bool('Publish on enter', 'Publish when entering the zone', false),
    exit: bool('Publish on exit', 'Publish when leaving the zone', false),
    verif: { type: 'integer', title: 'Verification time', description: 'Seconds inside or outside before the event fires', minimum: 0, default: 0 },
  });
}

/** A fresh copy of the default schema (callers may change what they get). */
export function defaultSchema(): Json {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: `${SCHEMA_ID_PREFIX}${DEFAULT_SCHEMA_VERSION}`,
    $comment: `Skyport's default tracker configuration schema, version ${DEFAULT_SCHEMA_VERSION} (the tag of $id).`,
    type: 'object',
    title: 'Configuration schema for tracker firmware',
    description: '',
    required: ['location'],
    additionalProperties: false,
    properties: {
      location: object('location', 'Location', 'Location publishing', {
        radius: { type: 'number', title: 'Radius trigger', description: 'Publish when the device has moved at least this many metres since the last publish; 0 turns it off', minimum: 0, maximum: 100000, default: 0 },
        interval_min: { type: 'integer', title: 'Maximum location update frequency', description: 'Never publish more often than every this many seconds', minimum: 0, default: 900 },
        interval_max: { type: 'integer', title: 'Minimum location update frequency', description: 'Publish at least every this many seconds', minimum: 0, default: 3600 },
        min_publish: bool('Minimal publish', 'Publish only latitude and longitude', false),
        lock_trigger: bool('Publish on GNSS lock', 'A change of GNSS lock triggers a publish', true),
        loc_ack: bool('Acknowledge location publishes', 'Expect the cloud to acknowledge location publishes, and retry without it', true, 11),
        enhance_loc: bool('Enhanced location', 'The cloud produces an enhanced geolocation', true, 12),
        tower: bool('Cell tower information', 'Include cell tower data', true, 12),
        gnss: bool('GNSS', 'Use GNSS', true, 12),
        wps: bool('Wi-Fi positioning', 'Include Wi-Fi access point data', true, 12),
        loc_cb: bool('Location callback', 'The cloud sends the enhanced location back to the device', false, 12),
        satdiag: bool('Satellite diagnostics', 'Publish GNSS constellation and signal diagnostics', false, 19),
      }, { required: ['radius', 'interval_min', 'interval_max', 'min_publish', 'lock_trigger'] }),
      store: object('store', 'Store and Forward', 'Keep unpublished locations while offline', {
        enable: bool('Enable', 'Keep unpublished locations on flash while offline', true),
        quota: { type: 'integer', title: 'Quota', description: 'Storage cap, KB', minimum: 0, maximum: 4000, default: 64 },
        policy: { type: 'string', title: 'Discard policy', description: 'Which entry to discard when over the quota', enum: ['drop_old', 'drop_new'], default: 'drop_old' },
      }, { minimumFirmwareVersion: 18 }),
      imu_trig: object('imu_trig', 'Motion', 'Motion triggers', {
        motion: { type: 'string', title: 'Movement', description: 'Publish on movement, with this sensitivity', enum: ['disable', 'low', 'medium', 'high'], default: 'disable' },
        high_g: { type: 'string', title: 'High G', description: 'Publish on a high-G event', enum: ['disable', 'enable'], default: 'disable' },
      }),
      temp_trig: object('temp_trig', 'Temperature', 'Temperature triggers', {
        high: { type: 'number', title: 'High temperature threshold', description: 'High threshold, °C', minimum: -40, maximum: 150, default: 150 },
        high_en: bool('High temperature enable', 'Compare with the high threshold', false),
        high_latch: bool('High temperature latch', 'Latch the high event until the temperature is below (high − hysteresis)', false),
        low: { type: 'number', title: 'Low temperature threshold', description: 'Low threshold, °C', minimum: -40, maximum: 150, default: -40 },
        low_en: bool('Low temperature enable', 'Compare with the low threshold', false),
        low_latch: bool('Low temperature latch', 'Latch the low event until the temperature is above (low + hysteresis)', false),
        hyst: { type: 'number', title: 'Hysteresis', description: 'Hysteresis, °C; 0 leaves it unused', minimum: 0, maximum: 190, default: 0 },
      }),
      rgb: object('rgb', 'RGB LED', 'Status LED', {
        type: { type: 'string', title: 'Type', description: 'LED mode', enum: ['off', 'particle', 'tracker'], default: 'particle' },
      }, { required: ['type'] }),
      sleep: object('sleep', 'Sleep', 'Low-power sleep', {
        mode: { type: 'string', title: 'Sleep mode', description: 'Sleep between activity', enum: ['disable', 'enable'], default: 'disable' },
        exe_min: { type: 'number', title: 'Minimum awake time', description: 'Minimum seconds awake after a publish', minimum: 5, default: 10 },
        conn_max: { type: 'number', title: 'Maximum connecting time', description: 'Maximum seconds waiting for the network and GNSS', minimum: 30, default: 90 },
      }, { minimumFirmwareVersion: 10 }),
      tracker: object('tracker', 'Tracker', 'Device', {
        usb_cmd: bool('USB commands', 'Accept JSON commands over USB', true),
      }),
      monitoring: object('monitoring', 'Device Monitoring', 'Device health monitoring', {
        device_monitor: bool('Device monitoring', 'Publish device health metrics and faults', false),
      }, { minimumFirmwareVersion: 18 }),
      geofence: object('geofence', 'Geofence', 'Geofence zones (set per device)', {
        interval: { type: 'integer', title: 'Wake interval', description: 'Wake period, seconds, to evaluate zones while sleeping', minimum: 0, default: 0 },
        zone1: zone(1),
        zone2: zone(2),
        zone3: zone(3),
        zone4: zone(4),
      }, { minimumFirmwareVersion: 17, deviceLevelOnly: true }),
    },
  };
}

/** The version of a schema: the number at the end of its `$id`, or null. */
export function schemaVersion(schema: Json): number | null {
  const id = typeof schema.$id === 'string' ? schema.$id : '';
  const m = /\/v(\d+)$/.exec(id);
  return m ? Number(m[1]) : null;
}
