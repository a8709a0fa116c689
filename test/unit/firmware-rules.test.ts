import { test } from 'node:test';
import assert from 'node:assert/strict';
import { factsOf, impactOf, parseFirmwareVersion, parseGroupNames, targetOf, validateColor, validateGroupName, type DeviceClass, type ReleaseState } from '../../src/domain/firmware.js';
import { DomainError } from '../../src/domain/errors.js';
import { checkModule, readModule } from '../../src/services/firmware/module.js';
import { firmwareBinary } from '../helpers/firmware.js';

/** The pure rules of product firmware (src/domain/firmware.ts) and the module checks (services/firmware/module.ts). */

const facts = { development: false, desiredFirmwareVersion: null, groupVersions: [], productDefault: null };

test('targeting, Particle\'s rules in order: development, lock, highest group release, product default, none', () => {
  assert.equal(targetOf(facts), null, 'nothing released');
  assert.deepEqual(targetOf({ ...facts, productDefault: 3 }), { version: 3, source: 'product_default' });
  assert.deepEqual(targetOf({ ...facts, productDefault: 3, groupVersions: [2, 5, 4] }), { version: 5, source: 'group' }, 'the highest of its groups, even below or above the default');
  assert.deepEqual(targetOf({ ...facts, productDefault: 9, groupVersions: [2] }), { version: 2, source: 'group' }, 'a group release wins over the default');
  assert.deepEqual(targetOf({ ...facts, productDefault: 3, groupVersions: [5], desiredFirmwareVersion: 1 }), { version: 1, source: 'lock' }, 'a lock wins, even downwards');
  assert.equal(targetOf({ ...facts, productDefault: 3, groupVersions: [5], desiredFirmwareVersion: 1, development: true }), null, 'a development device gets nothing, locked or not');
});

test('group names: lower-case letters, digits, - and _, at most 64; lists from arrays, single names and commas', () => {
  assert.equal(validateGroupName('eu-west_2'), 'eu-west_2');
  assert.equal(validateGroupName('x'.repeat(64)).length, 64);
  for (const bad of ['', 'EU', 'a b', 'a.b', 'ä', 'x'.repeat(65), 7, null]) assert.throws(() => validateGroupName(bad), DomainError, String(bad));
  assert.deepEqual(parseGroupNames(['a', 'b', 'a']), ['a', 'b']);
  assert.deepEqual(parseGroupNames('a,b, c'), ['a', 'b', 'c']);
  assert.deepEqual(parseGroupNames(undefined), []);
  assert.throws(() => parseGroupNames({ a: 1 }), /list of group names/);
  assert.equal(validateColor('#ABC'), '#abc');
  assert.throws(() => validateColor('blue'), /hex colour/);
});

test('versions: whole numbers 1-65535 from JSON, forms and paths', () => {
  assert.equal(parseFirmwareVersion(7), 7);
  assert.equal(parseFirmwareVersion(' 65535 '), 65535);
  for (const bad of [0, -1, 1.5, 65536, '1e3', 'latest', '', null, undefined]) assert.throws(() => parseFirmwareVersion(bad), /whole number from 1 to 65535/, String(bad));
});

test('impact: devices whose target changes to a version they do not run, by the version they run', () => {
  const klass = (c: Partial<DeviceClass>): DeviceClass => ({ development: false, desiredFirmwareVersion: null, running: 1, groupIds: [], count: 1, ...c });
  const before: ReleaseState = { productDefault: 1, groups: new Map([[10, null]]) };
  const after: ReleaseState = { productDefault: 2, groups: new Map([[10, null]]) };
  const classes = [
    klass({ count: 5 }), // updated, from 1
    klass({ running: null, count: 2 }), // updated, from none
    klass({ running: 2, count: 3 }), // runs it already
    klass({ development: true, count: 4 }), // development
    klass({ desiredFirmwareVersion: 1, count: 6 }), // locked
  ];
  assert.deepEqual(impactOf(classes.map((c) => ({ count: c.count, running: c.running, before: factsOf(c, before), after: factsOf(c, after) }))), {
    total: 7, by_version: [{ version: 0, total: 2 }, { version: 1, total: 5 }],
  });
  // A group change: into group 10 released at 3.
  const released: ReleaseState = { productDefault: 1, groups: new Map([[10, 3]]) };
  const c = klass({ count: 2 });
  assert.deepEqual(impactOf([{ count: 2, running: 1, before: factsOf(c, released), after: factsOf(c, released, [10]) }]), { total: 2, by_version: [{ version: 1, total: 2 }] });
  // Leaving the group falls back to the product default: an update too.
  assert.deepEqual(impactOf([{ count: 2, running: 3, before: factsOf(klass({ groupIds: [10] }), released), after: factsOf(klass({ groupIds: [] }), released) }]), { total: 2, by_version: [{ version: 3, total: 2 }] });
  // With nothing left to run, nobody is updated: a device keeps what it runs.
  assert.deepEqual(impactOf([{ count: 2, running: 2, before: factsOf(c, after), after: factsOf(c, { productDefault: null, groups: new Map() }) }]), { total: 0, by_version: [] });
});

test('the module checks read binary-version-reader\'s fields and say which check fails first', async () => {
  const image = firmwareBinary(300, 4, { platformId: 12 });
  const m = await readModule(image);
  assert.deepEqual({ ...m, crc: m?.crc.ok }, { platformId: 12, moduleFunction: 5, moduleVersion: 1, productId: 300, productVersion: 4, crc: true });
  assert.equal(await readModule(Buffer.alloc(10)), null);
  assert.equal(await readModule(Buffer.alloc(4096, 0x41)), null, 'text with no module prefix');
  const reason = async (img: Buffer, expected: { productId: number; platformId: number; version: number }) => {
    try {
      await checkModule(img, expected);
      return 'ok';
    } catch (err) {
      return (err as DomainError).details.reason as string;
    }
  };
  assert.equal(await reason(image, { productId: 300, platformId: 12, version: 4 }), 'ok');
  assert.equal(await reason(image, { productId: 300 + 65536, platformId: 12, version: 4 }), 'ok', 'a product id above 65535 is matched on its low 16 bits, as the suffix holds it');
  assert.equal(await reason(image, { productId: 301, platformId: 12, version: 4 }), 'product_id');
  assert.equal(await reason(image, { productId: 300, platformId: 13, version: 4 }), 'platform');
  assert.equal(await reason(image, { productId: 300, platformId: 12, version: 5 }), 'product_version');
  const cut = image.subarray(0, image.length - 1);
  assert.notEqual(await reason(cut, { productId: 300, platformId: 12, version: 4 }), 'ok', 'a truncated file');
});
