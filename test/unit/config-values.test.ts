import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultSchema } from '../../src/domain/config/default-schema.js';
import { configAjv } from '../../src/domain/config/schema-rules.js';
import { effectiveConfig, oversizedModules, schemaDefaults, validateValues } from '../../src/domain/config/values.js';

/** Configuration values against the schema: defaults, write rules, the effective configuration. */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const schema = defaultSchema() as Json;
const ajv = configAjv();

test('defaults: the fleet never shows device-level-only modules; a device sees them', () => {
  const fleet = schemaDefaults(schema, { deviceLevelOnly: false });
  assert.equal('geofence' in fleet, false);
  assert.deepEqual(fleet.location, { radius: 0, interval_min: 900, interval_max: 3600, min_publish: false, lock_trigger: true, loc_ack: true, enhance_loc: true, tower: true, gnss: true, wps: true, loc_cb: false, satdiag: false });
  const device = schemaDefaults(schema, { deviceLevelOnly: true });
  assert.equal((device.geofence as Json).zone3.radius, 0);
  assert.deepEqual(Object.keys(device), Object.keys(schema.properties));
});

test('writes: JSON pointers to bad values; scope rules for fleet, regular and development devices', () => {
  const fleet = { kind: 'fleet' } as const;
  assert.deepEqual(validateValues(schema, { location: { radius: 10, interval_min: 60, interval_max: 600, min_publish: false, lock_trigger: true } }, fleet, ajv), []);
  const bad = validateValues(schema, { location: { radius: -1, interval_min: 'often', interval_max: 600, min_publish: false, lock_trigger: true, colour: 'red' }, rgb: { type: 'disco' } }, fleet, ajv);
  const paths = bad.map((v) => v.path).sort();
  assert.deepEqual(paths, ['/location/colour', '/location/interval_min', '/location/radius', '/rgb/type']);
  assert.deepEqual(validateValues(schema, { spaceship: {} }, fleet, ajv).map((v) => v.path), ['/spaceship']);
  assert.match(validateValues(schema, { geofence: {} }, fleet, ajv)[0]!.message, /device-level only/);
  assert.match(validateValues(schema, { rgb: { type: 'off' } }, { kind: 'device', development: false }, ajv)[0]!.message, /development device/);
  assert.deepEqual(validateValues(schema, { rgb: { type: 'off' }, geofence: { interval: 5 } }, { kind: 'device', development: true }, ajv), []);
  assert.deepEqual(validateValues(schema, { geofence: { zone1: { lat: 91 } } }, { kind: 'device', development: false }, ajv).map((v) => v.path), ['/geofence/zone1/lat']);
  assert.deepEqual(validateValues(schema, [1], fleet, ajv).map((v) => v.path), ['']);
});

test('the effective configuration, module by module, with each source (docs/particle-compatibility.md#effective-configuration)', () => {
  const fleet = { rgb: { type: 'off' }, geofence: { interval: 9 } };
  const device = { rgb: { type: 'tracker' }, geofence: { interval: 60, zone2: { enable: true } } };
  // Regular device: fleet modules from the fleet, device-level-only ones from the device.
  const regular = effectiveConfig({ schema, fleet, device, deviceValuesWin: false });
  assert.deepEqual(regular.values.rgb, { type: 'off' });
  assert.equal((regular.values.geofence as Json).interval, 60);
  assert.equal((regular.values.geofence as Json).zone1.enable, false, 'keys left out take their defaults');
  assert.deepEqual({ ...(regular.values.geofence as Json).zone2, enable: undefined }, { ...(schemaDefaults(schema, { deviceLevelOnly: true }).geofence as Json).zone2, enable: undefined }, 'at every depth');
  assert.equal((regular.values.geofence as Json).zone2.enable, true);
  assert.deepEqual({ rgb: regular.sources.rgb, geofence: regular.sources.geofence, sleep: regular.sources.sleep }, { rgb: 'fleet', geofence: 'device', sleep: 'default' });
  // Development device (or back in regular mode before the next fleet change): its values win.
  const dev = effectiveConfig({ schema, fleet, device, deviceValuesWin: true });
  assert.deepEqual(dev.values.rgb, { type: 'tracker' });
  assert.equal(dev.sources.rgb, 'device');
  // Nothing set anywhere: defaults.
  assert.deepEqual(effectiveConfig({ schema, fleet: {}, device: {}, deviceValuesWin: false }).values.location, schemaDefaults(schema, { deviceLevelOnly: false }).location);
});

test('size: one module per message, measured against the publish limit', () => {
  const big = { geofence: { zone1: { shape_type: 'circular'.repeat(100) } } };
  assert.deepEqual(oversizedModules(big as never, 622), [{ module: 'geofence', bytes: JSON.stringify(big).length, limit: 622 }]);
  assert.deepEqual(oversizedModules({ rgb: { type: 'off' } }, 622), []);
});
