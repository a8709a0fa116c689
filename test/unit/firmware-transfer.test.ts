import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { nextStep, outcomeOnReturn, type UpdateRecord, type UpdateState } from '../../src/domain/firmware-updates.js';
import { chunkHeader, parseChunk, parseOtaMessage, type OtaBegin } from '../../src/domain/ota-protocol.js';
import { BadPayload } from '../../src/domain/device-protocol.js';
import { createImageCache } from '../../src/services/firmware/updates/image-cache.js';
import { Transfer, type OtaLink } from '../../src/services/firmware/updates/transfer.js';
import { FirmwareReceiver, type ReceiverHooks } from '../../src/sdk/firmware.js';
import { createUpdateRecords, type EmitEvent } from '../../src/services/firmware/updates/records.js';
import type { FirmwareUpdatesRepository } from '../../src/repositories/firmware-updates.repository.js';
import type { Clock } from '../../src/platform/clock.js';

/** The pure parts of firmware updates: the rules, the wire format, the window, the image cache, the device's checks. */

const record = (version: number, state: UpdateState): UpdateRecord => ({
  deviceId: 'd', productId: 1, version, state, size: 10, bytesSent: 0, offset: 0, error: null, rolloutId: null, startedAt: null, finishedAt: null, updatedAt: new Date(0),
});

test('the rules: what the cloud does for a connected device, and what a return means', () => {
  const base = { target: 2, running: 1, enabled: true, forced: false, newest: null, released: false };
  assert.equal(nextStep(base), 'start');
  assert.equal(nextStep({ ...base, target: null }), 'none');
  assert.equal(nextStep({ ...base, running: 2 }), 'none', 'runs it already');
  assert.equal(nextStep({ ...base, enabled: false }), 'pending');
  assert.equal(nextStep({ ...base, enabled: false, forced: true }), 'start');
  assert.equal(nextStep({ ...base, newest: record(2, 'downloading') }), 'resume');
  assert.equal(nextStep({ ...base, newest: record(2, 'applying') }), 'none', 'its outcome comes with its return');
  assert.equal(nextStep({ ...base, newest: record(2, 'failed') }), 'none', 'a failure is not repeated by itself');
  assert.equal(nextStep({ ...base, newest: record(2, 'failed'), released: true }), 'start');
  assert.equal(nextStep({ ...base, newest: record(3, 'failed') }), 'start', 'another version failed, not this one');
  assert.equal(nextStep({ ...base, newest: record(2, 'pending') }), 'start');

  assert.equal(outcomeOnReturn(null, 2), null);
  assert.equal(outcomeOnReturn(record(2, 'applying'), 2), 'succeeded');
  assert.equal(outcomeOnReturn(record(2, 'applying'), 1), 'failed');
  assert.equal(outcomeOnReturn(record(2, 'failed'), 2), 'succeeded', 'back on the new version after the time-out');
  assert.equal(outcomeOnReturn(record(2, 'downloading'), 1), null, 'a cut transfer resumes');
  assert.equal(outcomeOnReturn(record(2, 'succeeded'), 1), null);
});

test('the wire: chunk headers, and the checks of what a device sends', () => {
  const payload = Buffer.concat([chunkHeader('Ab3_-x9Z', 70_000), Buffer.from('bytes')]);
  assert.deepEqual(parseChunk(payload), { id: 'Ab3_-x9Z', offset: 70_000, data: Buffer.from('bytes') });
  assert.equal(parseChunk(Buffer.alloc(5)), null);
  const parse = (path: 'ready' | 'ack' | 'done', body: unknown) => parseOtaMessage(path, Buffer.from(JSON.stringify(body)));
  assert.deepEqual(parse('ready', { id: 'abcdefgh', offset: 5, chunk_size: 512 }), { kind: 'ready', id: 'abcdefgh', offset: 5, chunkSize: 512 });
  assert.deepEqual(parse('ready', { id: 'abcdefgh', error: 'updates_disabled' }), { kind: 'refused', id: 'abcdefgh', on: 'ready', error: 'updates_disabled' });
  assert.deepEqual(parse('ack', { id: 'abcdefgh', offset: 0 }), { kind: 'ack', id: 'abcdefgh', offset: 0 });
  assert.deepEqual(parse('done', { id: 'abcdefgh' }), { kind: 'done', id: 'abcdefgh' });
  assert.deepEqual(parse('done', { id: 'abcdefgh', error: 'sha256_mismatch' }), { kind: 'refused', id: 'abcdefgh', on: 'done', error: 'sha256_mismatch' });
  for (const [path, body] of [['ready', { id: 'abcdefgh' }], ['ready', { id: 'abc', offset: 0 }], ['ack', { id: 'abcdefgh', offset: 1.5 }], ['ack', { id: 'abcdefgh', offset: 2 ** 33 }],
    ['done', { id: 'abcdefgh', error: 7 }], ['ready', { id: 'abcdefgh', offset: 0, chunk_size: 63 }], ['done', []]] as const) {
    assert.throws(() => parse(path, body), BadPayload, `${path} ${JSON.stringify(body)}`);
  }
});

/** A link whose socket takes `room` chunks before it must drain. */
function fakeLink(room = Infinity, chunkLimit = Infinity) {
  const chunks: Array<{ offset: number; bytes: Buffer }> = [];
  let drained: () => void = () => undefined;
  let left = room;
  const link: OtaLink = {
    open: true, chunkLimit, subscribed: true,
    begin: () => undefined,
    chunk: (_id, offset, bytes) => { chunks.push({ offset, bytes }); left -= 1; return left > 0; },
    writable: () => new Promise<void>((resolve) => { drained = () => { left = room; resolve(); }; }),
    onClose: () => undefined,
  };
  return { link, chunks, drain: () => drained() };
}
const tick = () => new Promise((r) => setImmediate(r));

test('a transfer keeps at most a window of chunks beyond the acknowledgement, waits for a full socket, and starts over at a new ready', async () => {
  const image = Buffer.alloc(100_000, 7);
  const { link, chunks, drain } = fakeLink(3);
  let sent = 0;
  const t = new Transfer('abcdefgh', image, link, 0, (n) => { sent += n; });
  assert.equal(t.chunkSize, 4096);
  assert.equal(t.onReady(8192, undefined, 1), null);
  await tick();
  assert.deepEqual(chunks.map((c) => c.offset), [8192, 12288, 16384], 'the socket is full after three');
  drain();
  await tick();
  assert.equal(chunks.length, 6);
  drain();
  await tick();
  drain();
  await tick();
  assert.equal(chunks.length, 8, 'a window of eight, then nothing until an acknowledgement');
  assert.ok(chunks.every((c) => c.bytes.buffer === image.buffer), 'chunks are views into the image, not copies');
  assert.equal(t.onAck(8192 + 4 * 4096, 2), null);
  await tick();
  drain();
  await tick();
  assert.equal(chunks.length, 12);
  assert.match(t.onAck(image.length, 3) ?? '', /beyond what was sent/);
  assert.match(t.onReady(image.length + 1, undefined, 4) ?? '', /beyond the image/);
  // The device found a gap: from what it holds, in the smaller chunks it asks for.
  t.onReady(20_000, 1000, 5);
  drain();
  await tick();
  assert.deepEqual(chunks.slice(12, 14).map((c) => [c.offset, c.bytes.length]), [[20_000, 1000], [21_000, 1000]]);
  assert.equal(sent, chunks.reduce((n, c) => n + c.bytes.length, 0));
  // A device whose packet limit is small gets chunks that fit it.
  assert.equal(new Transfer('abcdefgh', image, fakeLink(Infinity, 1500).link, 0, () => undefined).chunkSize, 1500);
});

test('the image cache: one load and the same Buffer for every transfer of a version; failed loads are not kept; idle images go beyond the budget', async () => {
  const loads: string[] = [];
  let fail = true;
  const cache = createImageCache({
    load: async (p, v) => {
      loads.push(`${p}/${v}`);
      if (v === 9 && fail) throw new Error('store away');
      return Buffer.alloc(1000, v);
    },
    maxIdleBytes: 1500,
  });
  const held = await Promise.all([1, 2, 3, 4].map(() => cache.acquire(1, 1)));
  assert.deepEqual(loads, ['1/1']);
  assert.ok(held.every((h) => h.bytes === held[0]!.bytes), 'the same Buffer');
  assert.equal(held[0]!.sha256, createHash('sha256').update(Buffer.alloc(1000, 1)).digest('hex'));
  await assert.rejects(cache.acquire(1, 9));
  fail = false;
  await cache.acquire(1, 9).then((h) => h.release());
  assert.deepEqual(loads, ['1/1', '1/9', '1/9']);
  // In use, an image stays whatever the budget; idle, the least recently used go.
  const two = await cache.acquire(1, 2);
  two.release();
  assert.equal(cache.held().images, 2, 'of the idle ones, only the newest fits the budget');
  for (const h of held) h.release();
  assert.deepEqual(cache.held(), { images: 1, bytes: 1000 });
  await cache.acquire(1, 1);
  assert.equal(loads.at(-1), '1/1', 'dropped, read again');
});

/** A receiver whose messages and outcomes the test reads. */
function receiver(options: Partial<ReceiverHooks> = {}) {
  const sent: Array<[string, Record<string, unknown>]> = [];
  const received: Buffer[] = [];
  const failed: string[] = [];
  const r = new FirmwareReceiver({
    send: (leaf, body) => sent.push([leaf, body]), enabled: () => true, key: null,
    received: (image) => received.push(image), failed: (_o, e) => failed.push(e), progress: () => undefined, ...options,
  });
  return { r, sent, received, failed };
}
const offer = (image: Buffer, id = 'abcdefgh', extra: Partial<OtaBegin> = {}): Record<string, unknown> => ({
  id, version: 2, size: image.length, sha256: createHash('sha256').update(image).digest('hex'), chunk_size: 100, window: 4, signature: null, forced: false, ...extra,
});
const chunk = (id: string, image: Buffer, offset: number, size = 100) => Buffer.concat([chunkHeader(id, offset), image.subarray(offset, offset + size)]);

test('the device\'s side: acknowledgements every half window, a gap answered by ready once, a resume from what it holds, and every check before the image is handed over', async () => {
  const image = Buffer.alloc(1000, 3);
  const { r, sent, received } = receiver();
  await r.onBegin(offer(image));
  assert.deepEqual(sent.shift(), ['ready', { id: 'abcdefgh', offset: 0 }]);
  for (const o of [0, 100, 200]) await r.onChunk(chunk('abcdefgh', image, o));
  assert.deepEqual(sent.shift(), ['ack', { id: 'abcdefgh', offset: 200 }], 'after two chunks: half the window');
  await r.onChunk(chunk('abcdefgh', image, 500));
  await r.onChunk(chunk('abcdefgh', image, 600));
  assert.deepEqual(sent.splice(0), [['ready', { id: 'abcdefgh', offset: 300 }]], 'a gap: ready again, once');
  await r.onChunk(chunk('abcdefgh', image, 100));
  await r.onChunk(chunk('wrongid0', image, 300));
  assert.deepEqual(sent, [], 'repeats and other transfers are dropped');
  // The connection drops; the next offer of the same image resumes where it stopped.
  await r.onBegin(offer(image, 'newid000'));
  assert.deepEqual(sent.shift(), ['ready', { id: 'newid000', offset: 300 }]);
  for (let o = 300; o < 1000; o += 100) await r.onChunk(chunk('newid000', image, o));
  assert.deepEqual(sent.at(-2), ['ack', { id: 'newid000', offset: 1000 }]);
  assert.deepEqual(sent.at(-1), ['done', { id: 'newid000' }]);
  assert.ok(received[0]?.equals(image));
});

test('the device refuses before applying: a SHA-256 that does not hold, a bad or missing signature, its own check, an offer while updates are disabled', async () => {
  const image = Buffer.alloc(300, 5);
  const whole = async (r: FirmwareReceiver, body: Record<string, unknown>, bytes = image) => {
    await r.onBegin(body);
    for (let o = 0; o < bytes.length; o += 100) await r.onChunk(chunk(body.id as string, bytes, o));
  };
  const corrupt = receiver();
  const damaged = Buffer.from(image);
  damaged.writeUInt8(damaged.readUInt8(150) ^ 1, 150);
  await whole(corrupt.r, offer(image), damaged);
  assert.deepEqual(corrupt.sent.at(-1), ['done', { id: 'abcdefgh', error: 'sha256_mismatch' }]);
  assert.deepEqual(corrupt.received, []);
  assert.deepEqual(corrupt.failed, ['sha256_mismatch']);
  // Refused bytes are not resumed: the next offer starts from 0.
  await corrupt.r.onBegin(offer(image, 'again000'));
  assert.deepEqual(corrupt.sent.at(-1), ['ready', { id: 'again000', offset: 0 }]);

  const keys = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const signed = receiver({ key: keys.publicKey });
  await whole(signed.r, offer(image, 'abcdefgh', { signature: sign(null, image, other.privateKey).toString('base64') }));
  assert.deepEqual(signed.sent.at(-1), ['done', { id: 'abcdefgh', error: 'bad_signature' }]);
  await whole(signed.r, offer(image, 'abcdefg2', { signature: 'AAAA' }));
  assert.deepEqual(signed.sent.at(-1), ['done', { id: 'abcdefg2', error: 'bad_signature' }]);
  await signed.r.onBegin(offer(image, 'abcdefg3'));
  assert.deepEqual(signed.sent.at(-1), ['ready', { id: 'abcdefg3', error: 'unsigned' }]);
  await whole(signed.r, offer(image, 'abcdefg4', { signature: sign(null, image, keys.privateKey).toString('base64') }));
  assert.deepEqual(signed.sent.at(-1), ['done', { id: 'abcdefg4' }]);
  assert.equal(signed.received.length, 1);

  const checked = receiver({ check: () => 'wrong_platform' });
  await whole(checked.r, offer(image));
  assert.deepEqual(checked.sent.at(-1), ['done', { id: 'abcdefgh', error: 'wrong_platform' }]);
  const declined = receiver({ offer: () => false });
  await declined.r.onBegin(offer(image));
  assert.deepEqual(declined.sent, [['ready', { id: 'abcdefgh', error: 'refused' }]]);
  const disabled = receiver({ enabled: () => false });
  await disabled.r.onBegin(offer(image));
  await disabled.r.onBegin(offer(image, 'forced00', { forced: true }));
  assert.deepEqual(disabled.sent, [['ready', { id: 'abcdefgh', error: 'updates_disabled' }], ['ready', { id: 'forced00', offset: 0 }]]);
});

/** Update records over a stand-in store and clock: `write` stores a batch, `emit` publishes an event. */
function recordsOver(deps: { write(): Promise<void>; nowMs: number; emit?: EmitEvent }) {
  return createUpdateRecords({
    repo: { write: deps.write } as unknown as FirmwareUpdatesRepository,
    clock: { now: () => new Date(deps.nowMs) } as Clock,
    log: () => ({ error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined }),
    emit: deps.emit ?? (async () => undefined),
  });
}
const TARGET = { productId: 1, version: 2, sha256: 'x', size: 10, signature: null };

test('a device\'s update events are published in the order they were made, however long each publish takes', async () => {
  const published: string[] = [];
  // The first publish (auto-update) is the slow one: its device lookup finishes last.
  const delays = [30, 0, 0];
  const records = recordsOver({
    write: async () => undefined,
    nowMs: 0,
    emit: async (deviceId, name, data) => {
      const wait = delays.shift() ?? 0;
      await new Promise((r) => setTimeout(r, wait));
      published.push(`${deviceId} ${name} ${data}`);
    },
  });
  const started = await records.downloading('d', null, TARGET);
  await records.succeeded(started);
  while (published.length < 3) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(published, ['d spark/status auto-update', 'd spark/flash/status started ', 'd spark/flash/status success ']);
});

test('what a node wrote last about a device\'s update wins over a read of the store that may not show it yet, until its ending is stored', async () => {
  let waiting: (() => void) | undefined;
  /** Stores the batch written next (the batcher writes on a later turn). */
  const store = async () => {
    while (!waiting) await new Promise((r) => setImmediate(r));
    const done = waiting;
    waiting = undefined;
    done();
  };
  const records = recordsOver({ write: () => new Promise<void>((resolve) => { waiting = resolve; }), nowMs: 1000 });
  const started = records.downloading('d', null, TARGET);
  await store();
  const downloading = await started;
  const applying = records.applying(downloading, { bytesSent: 10, offset: 10 });
  // The read began before the write of `applying` was stored: it shows the transfer under way.
  const staleRead = { ...downloading, updatedAt: new Date(900) };
  assert.equal(records.newest('d', staleRead)?.state, 'applying', 'not resumed as if still downloading');
  assert.equal(records.newest('other', staleRead), staleRead, 'other devices: the read');
  await store();
  await applying;
  const succeeded = records.succeeded({ ...downloading, state: 'applying' });
  assert.equal(records.newest('d', null)?.state, 'succeeded');
  await store();
  await succeeded;
  await new Promise((r) => setImmediate(r));
  assert.equal(records.newest('d', null), null, 'once its ending is stored, the store answers');
});
