import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultSchema, schemaVersion } from '../../src/domain/config/default-schema.js';
import { mergeAndCheck, mergeSchemas } from '../../src/domain/config/schema-merge.js';
import { skyport } from '../helpers/cli.js';

/** `skyport schema merge`: a custom schema derived from v19 brought up to a newer default. */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const v19 = () => defaultSchema() as Json;

/** A made-up v20: a new `location` key after `gnss`, a changed default and a changed maximum. */
function v20(): Json {
  const s = v19();
  s.$id = s.$id.replace(/v19$/, 'v20');
  s.$comment = 'version 20';
  const loc = s.properties.location.properties;
  const entries = Object.entries(loc);
  const at = entries.findIndex(([k]) => k === 'gnss') + 1;
  entries.splice(at, 0, ['glonass', { $id: '#/properties/location/properties/glonass', type: 'boolean', title: 'GLONASS', description: 'Use GLONASS', default: true, examples: [true] }]);
  s.properties.location.properties = Object.fromEntries(entries);
  s.properties.location.properties.interval_min.default = 600;
  s.properties.location.properties.interval_min.examples = [600];
  s.properties.store.properties.quota.maximum = 8000;
  return s;
}

const engine = () => ({
  $id: '#/properties/engine', type: 'object', title: 'Engine', description: 'CAN demo engine settings', default: {},
  properties: {
    idle: { $id: '#/properties/engine/properties/idle', type: 'integer', title: 'Idle RPM speed', description: 'Below this RPM the engine counts as idling', default: 1600, minimum: 0, maximum: 10000, examples: [] },
  },
});

/** The engine example of Particle's tracker documentation on v19, with the LED default changed too. */
function custom(): Json {
  const s = v19();
  s.properties.engine = engine();
  s.properties.rgb.properties.type.default = 'tracker';
  return s;
}

/** Same content and the same key order at every level. */
const sameOrder = (a: unknown, b: unknown) => assert.equal(JSON.stringify(a, null, 1), JSON.stringify(b, null, 1));

test('a clean merge: the custom module and change stay, the new key, default and maximum come in', () => {
  const { merged, conflicts, violations } = mergeAndCheck({ base: v19(), theirs: v20(), ours: custom() });
  assert.deepEqual(conflicts, []);
  assert.deepEqual(violations, []);
  const expected = v20();
  expected.properties.engine = engine();
  expected.properties.rgb.properties.type.default = 'tracker';
  sameOrder(merged, expected);
  assert.equal(schemaVersion(merged), 20);
  const m = merged as Json;
  assert.deepEqual(Object.keys(m.properties.location.properties).slice(7, 10), ['tower', 'gnss', 'glonass']);
  assert.equal(Object.keys(m.properties).at(-1), 'engine');
  assert.equal(m.properties.location.properties.interval_min.default, 600);
  assert.equal(m.properties.store.properties.quota.maximum, 8000);
});

test('changed differently on both sides: a conflict with its pointer and three values, ours kept', () => {
  const ours = custom();
  ours.properties.store.properties.quota.maximum = 2000;
  ours.properties.location.properties.interval_min.default = 600; // the same change as theirs: taken
  const { merged, conflicts } = mergeSchemas({ base: v19(), theirs: v20(), ours });
  assert.deepEqual(conflicts, [{ path: '/properties/store/properties/quota/maximum', base: 4000, ours: 2000, theirs: 8000, reason: 'changed-in-both' }]);
  assert.equal((merged as Json).properties.store.properties.quota.maximum, 2000);
  assert.equal((merged as Json).properties.location.properties.interval_min.default, 600);
});

test('the result is checked as a custom schema of the new default: a key the result lacks is a violation', () => {
  const theirs = v20();
  const ours = custom();
  // Ours removed an annotation theirs changed: a conflict, and the result keeps ours (absent).
  delete ours.properties.store.properties.quota;
  const { conflicts, violations } = mergeAndCheck({ base: v19(), theirs, ours });
  assert.deepEqual(conflicts.map((c) => [c.path, c.reason]), [['/properties/store/properties/quota', 'removed-in-ours']]);
  assert.ok(violations.some((v) => v.path === '/properties/store/properties/quota' && /missing/.test(v.message)), JSON.stringify(violations));
});

test('removed in theirs: gone when ours left it, a conflict keeping ours when ours changed it', () => {
  const theirs = v20();
  delete theirs.properties.location.properties.loc_cb;
  delete theirs.properties.monitoring.properties.device_monitor.examples;
  delete theirs.properties.tracker.properties.usb_cmd.examples;
  const ours = custom();
  ours.properties.tracker.properties.usb_cmd.examples = [false];
  const { merged, conflicts, violations } = mergeAndCheck({ base: v19(), theirs, ours });
  const m = merged as Json;
  assert.equal('loc_cb' in m.properties.location.properties, false);
  // Checked against the new default, which no longer has loc_cb: not a missing key.
  assert.deepEqual(violations, []);
  assert.equal('examples' in m.properties.monitoring.properties.device_monitor, false);
  assert.deepEqual(m.properties.tracker.properties.usb_cmd.examples, [false]);
  assert.deepEqual(conflicts, [{ path: '/properties/tracker/properties/usb_cmd/examples', base: [true], ours: [false], theirs: undefined, reason: 'removed-in-theirs' }]);
});

test('key order: ours order kept, new keys after their predecessor in theirs, or at the end', () => {
  const base = { a: 1, b: 2, c: 3 };
  const ours = { c: 3, a: 1, b: 2, mine: 0 };
  const theirs = { first: 0, a: 1, x: 9, y: 8, b: 2, c: 3 };
  const { merged, conflicts } = mergeSchemas({ base, theirs, ours });
  assert.deepEqual(conflicts, []);
  assert.deepEqual(Object.keys(merged), ['c', 'a', 'x', 'y', 'b', 'mine', 'first']);
});

test('required and enum merge as sets; other arrays are single values', () => {
  const base = { required: ['a', 'b'], properties: { p: { enum: ['x', 'y', 'z'], examples: [1] }, required: { type: 'object' } } };
  const ours = { required: ['b', 'a', 'mine'], properties: { p: { enum: ['x', 'y', 'z', 'w'], examples: [2] }, required: { type: 'object' } } };
  const theirs = { required: ['a', 'b', 'new'], properties: { p: { enum: ['x', 'z', 'v'], examples: [3] }, required: { type: 'object' } } };
  const { merged, conflicts } = mergeSchemas({ base, theirs, ours });
  const m = merged as Json;
  assert.deepEqual(m.required, ['b', 'new', 'a', 'mine']); // 'new' follows 'b' as in theirs
  // Theirs dropped y, ours added w, theirs added v after z.
  assert.deepEqual(m.properties.p.enum, ['x', 'z', 'v', 'w']);
  assert.deepEqual(m.properties.p.examples, [2]);
  assert.deepEqual(conflicts, [{ path: '/properties/p/examples', base: [1], ours: [2], theirs: [3], reason: 'changed-in-both' }]);
  // Added on both sides where there was none: `required` unites, `enum` is compared whole.
  const both = mergeSchemas({ base: {}, ours: { required: ['a'], enum: [1] }, theirs: { required: ['b'], enum: [2] } });
  assert.deepEqual(both.merged.required, ['a', 'b']);
  assert.deepEqual(both.conflicts.map((c) => [c.path, c.reason]), [['/enum', 'added-in-both']]);
});

test('the top-level $id takes theirs\' version, also from a custom $id', () => {
  const ours = custom();
  ours.$id = 'https://acme.example/schemas/tracker/v19';
  const { merged, conflicts } = mergeSchemas({ base: v19(), theirs: v20(), ours });
  assert.deepEqual(conflicts, []);
  assert.equal(merged.$id, 'https://acme.example/schemas/tracker/v20');
  assert.equal(Object.keys(merged).indexOf('$id'), 1);
});

interface Run { code: number | null; out: string; err: string }

/** `skyport schema merge`, as built (the CLI's own start-up, not tsx's). */
async function cli(args: string[]): Promise<Run> {
  const r = await skyport(['schema', 'merge', ...args], { home: tmpdir() });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

test('skyport schema merge on files: clean to stdout or --out, conflicts exit 1, bad JSON one line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-merge-'));
  try {
    const file = (name: string, value: unknown) => {
      const p = join(dir, name);
      writeFileSync(p, typeof value === 'string' ? value : JSON.stringify(value));
      return p;
    };
    const base = file('v19.json', v19());
    const theirs = file('v20.json', v20());
    const ours = file('custom.json', custom());

    const conflicting = custom();
    conflicting.properties.store.properties.quota.maximum = 2000;
    const open = custom();
    open.additionalProperties = true;
    const out = join(dir, 'merged.json');
    // Each run starts a process; they are independent, so they run side by side.
    const [clean, written, builtIn, conflict, invalid, bad, missing] = await Promise.all([
      cli(['--base', base, '--theirs', theirs, '--ours', ours]),
      cli(['--base', base, '--theirs', theirs, '--ours', ours, '--out', out]),
      cli(['--base', base, '--ours', ours]),
      cli(['--base', base, '--theirs', theirs, '--ours', file('conflict.json', conflicting)]),
      cli(['--base', base, '--theirs', theirs, '--ours', file('open.json', open)]),
      cli(['--base', base, '--theirs', theirs, '--ours', file('bad.json', '{"type": ')]),
      cli(['--base', join(dir, 'nope.json'), '--ours', ours]),
    ]);

    assert.equal(clean.code, 0, clean.err);
    assert.equal(clean.err, '');
    const printed = JSON.parse(clean.out) as Json;
    assert.equal(schemaVersion(printed), 20);
    assert.ok(printed.properties.engine && printed.properties.location.properties.glonass);

    assert.equal(written.code, 0, written.err);
    assert.match(written.out, /merged cleanly to v20/);
    assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), printed);

    // Without --theirs, the built-in default of this Skyport is theirs.
    assert.equal(builtIn.code, 0, builtIn.err);
    assert.deepEqual(JSON.parse(builtIn.out), mergeSchemas({ base: v19(), theirs: defaultSchema(), ours: custom() }).merged);

    assert.equal(conflict.code, 1);
    const lines = conflict.err.trim().split('\n');
    assert.equal(lines.length, 2, conflict.err);
    assert.equal(lines[0], 'conflict /properties/store/properties/quota/maximum: changed differently in both (base 4000, ours 2000, theirs 8000); kept ours');
    assert.match(lines[1]!, /1 conflict\(s\), 0 violation\(s\)/);
    assert.equal((JSON.parse(conflict.out) as Json).properties.store.properties.quota.maximum, 2000);

    // No conflict, but the result breaks a rule of custom schemas.
    assert.equal(invalid.code, 1);
    assert.match(invalid.err, /^invalid \/additionalProperties: additionalProperties must be false at the top level\n.*0 conflict\(s\), 1 violation\(s\)/);

    assert.equal(bad.code, 1);
    assert.equal(bad.out, '');
    assert.match(bad.err, /^skyport: --ours .*bad\.json is not valid JSON: .+\n$/);

    assert.equal(missing.code, 1);
    assert.match(missing.err, /^skyport: cannot read --base .*nope\.json: ENOENT/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
