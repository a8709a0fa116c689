import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STORE, storeForFile } from './helpers/server.js';
import type { Queryable } from '../src/storage/db.js';
import { createConfigValuesRepository } from '../src/repositories/config-values.repository.js';

/**
 * What a product's effective configurations are computed from, read in one statement: the schema
 * as stored, the fleet's values and the devices' own. A batch of connecting devices names its
 * devices; a fan-out to more than a thousand reads every device's (services/config/reader.ts).
 */
const db = storeForFile();
const at = new Date('2026-12-06T00:00:00Z');

async function product(q: Queryable, slug: string): Promise<number> {
  const rows = await q.query<{ id: number | string }>(
    "INSERT INTO products (slug, name, platform_id, created_by, created_at, updated_at) VALUES ($1, $1, 26, 'u1', $2, $2) RETURNING id", [slug, at]);
  return Number(rows[0]?.id);
}

async function values(q: Queryable, productId: number, deviceId: string, modules: Record<string, unknown>): Promise<void> {
  for (const [module, value] of Object.entries(modules)) {
    await q.query('INSERT INTO config_values (product_id, device_id, module, value_text, updated_at) VALUES ($1, $2, $3, $4, $5)',
      [productId, deviceId, module, JSON.stringify(value), at]);
  }
}

test(`${STORE}: the schema, the fleet's values and the named devices' own values come in one read, and no other product's`, async () => {
  const repo = createConfigValuesRepository(db);
  await db.transaction(async (tx) => {
    const p = await product(tx, 'inputs-a');
    const other = await product(tx, 'inputs-b');
    await values(tx, p, '', { rgb: { type: 'on' }, sleep: { mode: 'disable' } });
    await values(tx, p, 'd1', { rgb: { type: 'off' } });
    await values(tx, p, 'd2', { sleep: { mode: 'enable' } });
    await values(tx, p, 'd3', { rgb: { type: 'particle' }, sleep: { mode: 'enable' } });
    await values(tx, other, '', { rgb: { type: 'other' } });
    await values(tx, other, 'd1', { rgb: { type: 'other-d1' } });

    // No schema of its own: the caller takes the default.
    const named = await repo.inputs(p, ['d1', 'd3', 'd9'], tx);
    assert.equal(named.schemaText, undefined);
    assert.deepEqual(named.fleet, { rgb: { type: 'on' }, sleep: { mode: 'disable' } });
    assert.deepEqual(Object.fromEntries(named.devices), { d1: { rgb: { type: 'off' } }, d3: { rgb: { type: 'particle' }, sleep: { mode: 'enable' } } });

    // None named: the fleet's alone.
    const none = await repo.inputs(p, [], tx);
    assert.deepEqual(none.fleet, named.fleet);
    assert.equal(none.devices.size, 0);

    // The whole fleet: every device's own values.
    await tx.query('INSERT INTO product_config_schemas (product_id, schema_text, updated_at, updated_by) VALUES ($1, $2, $3, $4)', [p, '{"type":"object"}', at, 'u1']);
    const all = await repo.inputs(p, undefined, tx);
    assert.equal(all.schemaText, '{"type":"object"}');
    assert.deepEqual(all.fleet, named.fleet);
    assert.deepEqual([...all.devices.keys()].sort(), ['d1', 'd2', 'd3']);
    assert.deepEqual(all.devices.get('d2'), { sleep: { mode: 'enable' } });

    const theirs = await repo.inputs(other, undefined, tx);
    assert.equal(theirs.schemaText, undefined);
    assert.deepEqual(theirs.fleet, { rgb: { type: 'other' } });
    assert.deepEqual(Object.fromEntries(theirs.devices), { d1: { rgb: { type: 'other-d1' } } });
  });
});
