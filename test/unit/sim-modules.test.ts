import { test } from 'node:test';
import assert from 'node:assert/strict';
import { schemaModules } from '../../src/sim/schema-modules.js';
import { apply, check, ConfigStatus, read } from '../../src/sdk/config.js';
import { defaultSchema } from '../../src/domain/config/default-schema.js';

test("a simulated device's modules: every module of the schema, holding its defaults, taking what the schema allows", () => {
  const modules = new Map(schemaModules(defaultSchema()));
  assert.deepEqual([...modules.keys()], Object.keys(defaultSchema().properties as object));
  const rgb = modules.get('rgb')!;
  assert.equal((read(rgb) as { type: string }).type, 'particle', 'an enumeration starts at its default name');
  assert.equal(check(rgb, { type: 'off' }), ConfigStatus.ok);
  apply(rgb, { type: 'off' });
  assert.equal((read(rgb) as { type: string }).type, 'off');
  assert.equal(check(rgb, { type: 'purple' }), ConfigStatus.invalid);
  const location = modules.get('location')!;
  assert.equal(check(location, { radius: -1 }), ConfigStatus.outOfRange, 'the schema minimum is the binding minimum');
  assert.equal(check(location, { radius: 'far' }), ConfigStatus.invalid);
  assert.equal(check(location, { min_publish: true, interval_min: 30 }), ConfigStatus.ok);
  const zone = (read(modules.get('geofence')!) as Record<string, Record<string, unknown>>).zone1!;
  assert.equal(zone.enable, false, 'nested objects are bound too');
  // Each call makes state of its own: one device's change is not another's.
  assert.equal((read(schemaModules(defaultSchema()).find(([n]) => n === 'rgb')![1]) as { type: string }).type, 'particle');
});
