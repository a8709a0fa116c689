import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_SCHEMA_VERSION, defaultSchema, schemaVersion } from '../../src/domain/config/default-schema.js';
import { checkSchema, configAjv } from '../../src/domain/config/schema-rules.js';

/** The default tracker schema and the rules a product's custom schema must follow (docs/particle-compatibility.md#schema-keyword-restrictions). */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

test('the default schema: version 19 or later, the modules of Particle\'s tracker schema in display order, geofence per device', () => {
  const s = defaultSchema() as Json;
  assert.ok(DEFAULT_SCHEMA_VERSION >= 19);
  assert.equal(schemaVersion(s), DEFAULT_SCHEMA_VERSION);
  assert.deepEqual(Object.keys(s.properties), ['location', 'store', 'imu_trig', 'temp_trig', 'rgb', 'sleep', 'tracker', 'monitoring', 'geofence']);
  assert.equal(s.additionalProperties, false);
  assert.equal(s.properties.geofence.deviceLevelOnly, true);
  assert.deepEqual(Object.keys(s.properties.geofence.properties), ['interval', 'zone1', 'zone2', 'zone3', 'zone4']);
  assert.deepEqual(Object.keys(s.properties.geofence.properties.zone4.properties), ['enable', 'shape_type', 'lat', 'lon', 'radius', 'inside', 'outside', 'enter', 'exit', 'verif']);
  assert.deepEqual(s.properties.location.properties.radius, { $id: '#/properties/location/properties/radius', type: 'number', title: 'Radius trigger', description: s.properties.location.properties.radius.description, default: 0, minimum: 0, maximum: 100000, examples: [0] });
  assert.equal(s.properties.location.properties.interval_min.default, 900);
  assert.equal(s.properties.location.properties.satdiag.minimumFirmwareVersion, 19);
  assert.deepEqual(s.properties.store.properties.policy.enum, ['drop_old', 'drop_new']);
  assert.equal(s.properties.temp_trig.properties.low.minimum, -40);
  assert.equal(s.properties.sleep.minimumFirmwareVersion, 10);
  // Every leaf has a type, a title, a description and a default that its own rules accept.
  const ajv = configAjv();
  const leaves = (node: Json, path: string): Array<[string, Json]> => Object.entries(node.properties ?? {}).flatMap(([k, v]) => ((v as Json).type === 'object' ? leaves(v as Json, `${path}.${k}`) : [[`${path}.${k}`, v as Json]]));
  for (const [path, l] of leaves(s, '')) {
    assert.ok(l.title && typeof l.description === 'string' && 'default' in l, path);
    assert.ok(ajv.validate({ ...l, $id: undefined }, l.default), `${path}: its default fits`);
  }
  assert.deepEqual(checkSchema(s), []);
  assert.notEqual(defaultSchema(), defaultSchema(), 'a fresh copy each time');
});

test('a custom schema: the default plus a module is accepted (the engine example of Particle\'s tracker documentation)', () => {
  const s = defaultSchema() as Json;
  s.properties.engine = {
    $id: '#/properties/engine', type: 'object', title: 'Engine', description: 'CAN demo engine settings', default: {},
    properties: {
      idle: { $id: '#/properties/engine/properties/idle', type: 'integer', title: 'Idle RPM speed', description: 'Below this RPM the engine counts as idling', default: 1600, minimum: 0, maximum: 10000, examples: [] },
      fastpub: { $id: '#/properties/engine/properties/fastpub', type: 'integer', title: 'Publish period when running (milliseconds)', description: '0 means the default', default: 0, minimum: 0, maximum: 3600000, examples: [] },
    },
  };
  s.$schema = 'https://particle.io/draft-07/schema#';
  assert.deepEqual(checkSchema(s), []);
});

test('what a custom schema may not do, each named with a JSON pointer', () => {
  const broken = defaultSchema() as Json;
  delete broken.properties.geofence.properties.zone2.properties.lat;
  delete broken.properties.monitoring;
  broken.properties.location.properties.radius.pattern = '^x';
  broken.properties.store.patternProperties = { '^a': { type: 'string' } };
  broken.properties.rgb.properties.type.$ref = 'https://example.com/remote.json';
  broken.properties.tracker.deviceLevelOnly = 'yes';
  broken.properties.sleep.minimumFirmwareVersion = '10';
  broken.additionalProperties = true;
  const v = checkSchema(broken);
  const paths = v.map((x) => x.path);
  for (const p of [
    '/properties/geofence/properties/zone2/properties/lat', '/properties/monitoring', '/properties/monitoring/properties/device_monitor',
    '/properties/location/properties/radius/pattern', '/properties/store/patternProperties', '/properties/rgb/properties/type/$ref',
    '/properties/tracker/deviceLevelOnly', '/properties/sleep/minimumFirmwareVersion', '/additionalProperties',
  ]) assert.ok(paths.includes(p), `${p} in ${JSON.stringify(paths)}`);
  assert.ok(v.some((x) => x.message === 'geofence.zone2.lat of the default schema is missing'));

  assert.deepEqual(checkSchema([]).map((x) => x.message), ['A schema is a JSON object']);
  assert.ok(checkSchema({ ...defaultSchema(), $schema: 'http://json-schema.org/draft-04/schema#' }).some((x) => x.path === '/$schema'));
  // Not JSON Schema at all: a type that does not exist.
  const wrongType = defaultSchema() as Json;
  wrongType.properties.tracker.properties.usb_cmd.type = 'flag';
  assert.ok(checkSchema(wrongType).some((x) => x.message.startsWith('Not valid JSON Schema')));
});
