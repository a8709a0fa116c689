import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newDeliveryId } from '../../src/services/webhooks/manage.js';
import { createSecrets } from '../../src/platform/secrets.js';

const secrets = createSecrets();
/** How the store sorts text in the C collation: by UTF-8 bytes. */
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

test('delivery ids sort by the time they were made, whatever their random part, and stay unique', () => {
  // Times across every digit's carry of base32 (31 → 32, 1023 → 1024, …), and today's.
  const times = [0, 1, 31, 32, 33, 1023, 1024, 32767, 32768, 1796542578003, 1796542578004, 1796542579000, 2 ** 48 - 1];
  for (let i = 0; i < 2000; i++) times.push(1796542578003 + Math.floor(Math.random() * 1e10));
  times.sort((a, b) => a - b);
  const ids = times.map((t) => newDeliveryId(secrets, t));
  for (const id of ids) assert.match(id, /^msg_[0-9A-HJKMNP-TV-Z]{10}[A-Za-z0-9_-]{22}$/, id);
  for (let i = 1; i < ids.length; i++) {
    if (times[i] === times[i - 1]) continue;
    const [a, b] = [ids[i - 1] as string, ids[i] as string];
    assert.ok(byBytes(a, b) < 0, `${a} (${times[i - 1]}) before ${b} (${times[i]})`);
    assert.ok(a.localeCompare(b, 'en') < 0, `${a} before ${b} in a language's collation too`);
  }
  assert.equal(new Set(ids).size, ids.length);
  // The time part is the time in milliseconds, base 32 (Number's own digits, spelt as Crockford's).
  const crockford = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  for (const t of [0, 1796542578003, 2 ** 48 - 1]) {
    const digits = [...t.toString(32).padStart(10, '0')].map((c) => crockford.charAt(parseInt(c, 32))).join('');
    assert.equal(newDeliveryId(secrets, t).slice(4, 14), digits, String(t));
  }
});
