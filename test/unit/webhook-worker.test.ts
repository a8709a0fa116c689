import { test } from 'node:test';
import assert from 'node:assert/strict';
import { systemClock } from '../../src/platform/clock.js';
import type { AttemptOutcome, DeliveryRecord, WebhookRecord, WebhooksRepository } from '../../src/repositories/webhooks.repository.js';
import { createHosts, type Hosts } from '../../src/services/webhooks/hosts.js';
import { createWebhookIndex } from '../../src/services/webhooks/matching.js';
import type { OutgoingRequest } from '../../src/services/webhooks/request.js';
import type { AttemptResult, Sender } from '../../src/services/webhooks/sender.js';
import { parseWebhook } from '../../src/services/webhooks/spec.js';
import { createWorker } from '../../src/services/webhooks/worker.js';
import { eventually } from '../helpers/eventually.js';

/**
 * The worker with the store, the network and the clock replaced: what it sends when, and what it
 * records. The full path (a device's event to a receiver) is tested in test/webhooks-*.test.ts.
 */
const quiet = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

function webhook(id: string, url: string): WebhookRecord {
  const at = new Date();
  return {
    id, scope: { kind: 'product', productId: 1 }, spec: parseWebhook({ event: 'e', url }, 'product'), secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    previousSecret: null, previousSecretUntil: null, disabledReason: null, failingSince: null, createdAt: at, updatedAt: at,
  };
}

let n = 0;
function delivery(webhookId: string): DeliveryRecord {
  const at = new Date();
  return {
    id: `d${++n}`, webhookId, status: 'sending', attempts: 0, skipped: 0, nextAt: at, createdAt: at, finishedAt: null, resendOf: null,
    event: { name: 'e', data: String(n), coreid: 'dev', published_at: at.toISOString(), productId: 1, owner: null },
  };
}

/** A receiver per host that answers when told to; a store whose writes of attempts wait until let go. */
function harness(options: { concurrency: number; hostConcurrency: number; stored?: DeliveryRecord[]; hosts?: Hosts; holdPerHost?: number }, hooks: WebhookRecord[]) {
  const index = createWebhookIndex();
  index.replace(hooks);
  const sent: OutgoingRequest[] = [];
  const answers: Array<() => void> = [];
  const sender: Sender = {
    send: (r) => new Promise<AttemptResult>((resolve) => {
      sent.push(r);
      answers.push(() => resolve({ status: 200, latencyMs: 1, body: '', retryAfter: undefined, error: null, refused: false }));
    }),
    close: async () => undefined,
  };
  const recorded: AttemptOutcome[] = [];
  const excluded: string[][] = [];
  const probed: string[][] = [];
  let storeOpen: () => void = () => undefined;
  let storeGate = Promise.resolve();
  const repo = {
    async recordAttempts(outcomes: AttemptOutcome[]) {
      await storeGate;
      recorded.push(...outcomes);
    },
    // Due deliveries in the store, handed out up to each poll's room, but those of the webhooks excluded.
    claimDue: async (_node: string, _now: Date, _until: Date, limit: number, exclude: string[] = [], probing: string[] = []) => {
      excluded.push(exclude);
      probed.push(probing);
      const stored = options.stored ?? [];
      // One at most of each webhook probed.
      const taken = stored.filter((d) => !exclude.includes(d.webhookId))
        .filter((d, i, all) => !probing.includes(d.webhookId) || all.findIndex((o) => o.webhookId === d.webhookId) === i).slice(0, limit);
      for (const d of taken) stored.splice(stored.indexOf(d), 1);
      return taken;
    },
    release: async () => undefined,
  } as unknown as WebhooksRepository;
  const worker = createWorker({
    repo, index, sender, hosts: options.hosts ?? createHosts({ concurrency: options.hostConcurrency, windowMs: 30_000, minErrors: 5, sleepMs: 10_000 }), clock: systemClock,
    log: () => quiet, node: 'n1', leaseMs: 60_000, concurrency: options.concurrency, pollMs: 60_000, holdPerHost: options.holdPerHost ?? 1_000_000,
    context: async (d) => ({ id: d.id, name: d.event.name, data: d.event.data, coreid: d.event.coreid, published_at: d.event.published_at, productId: 1, ownerName: null, firmwareVersion: null }),
    publish: () => undefined,
    attempted: () => undefined,
  });
  return {
    worker, sent, recorded, excluded, probed,
    /** Answers every request sent so far. */
    answerAll: () => { for (const a of answers.splice(0)) a(); },
    closeStore: () => { storeGate = new Promise((resolve) => { storeOpen = resolve; }); },
    openStore: () => storeOpen(),
  };
}

/** Hosts of `concurrency` slots each, of which `host` failed enough at `at` to sleep for `sleepMs`. */
function sleptHosts(concurrency: number, host = 'asleep.example', sleepMs = 10_000, at = Date.now()): Hosts {
  const hosts = createHosts({ concurrency, windowMs: 30_000, minErrors: 5, sleepMs });
  for (let i = 0; i < 5; i++) {
    hosts.start(host);
    hosts.finish(host, false, at);
  }
  return hosts;
}

const turns = async (k = 5) => { for (let i = 0; i < k; i++) await new Promise((r) => setImmediate(r)); };
const hostOfRequest = (r: OutgoingRequest) => new URL(r.url).hostname;

test('a full host\'s backlog does not hold back another host: its delivery is sent at once, and the backlog in order', async () => {
  const slow = webhook('w-slow', 'https://slow.example/hook');
  const fast = webhook('w-fast', 'https://fast.example/hook');
  const h = harness({ concurrency: 16, hostConcurrency: 2 }, [slow, fast]);
  const backlog = Array.from({ length: 5000 }, () => delivery(slow.id));
  h.worker.take(backlog, Date.now() + 60_000);
  await turns();
  assert.deepEqual(h.sent.map(hostOfRequest), ['slow.example', 'slow.example'], 'two at once to the slow host, its bound');
  h.worker.take([delivery(fast.id)], Date.now() + 60_000);
  await turns();
  assert.equal(h.sent.length, 3);
  assert.equal(hostOfRequest(h.sent[2] as OutgoingRequest), 'fast.example');
  assert.deepEqual(h.worker.stats(), { inFlight: 3, ready: 4998 });
  // The slow host's deliveries go in the order they were taken.
  for (let i = 0; i < 3; i++) {
    h.answerAll();
    await turns();
  }
  const ids = h.sent.filter((r) => hostOfRequest(r) === 'slow.example').map((r) => r.headers['webhook-id']);
  assert.deepEqual(ids, backlog.slice(0, ids.length).map((d) => d.id));
  assert.equal(ids.length, 8);
});

test('a host\'s slot is free once its answer is in: the next delivery is sent while the store still records the first', async () => {
  const w = webhook('w1', 'https://one.example/hook');
  const h = harness({ concurrency: 4, hostConcurrency: 1 }, [w]);
  h.closeStore();
  h.worker.take([delivery(w.id), delivery(w.id), delivery(w.id)], Date.now() + 60_000);
  await turns();
  assert.equal(h.sent.length, 1, 'one at a time to the host');
  h.answerAll();
  await turns();
  assert.equal(h.sent.length, 2, 'the second is sent before the first attempt is recorded');
  assert.equal(h.recorded.length, 0);
  h.answerAll();
  await turns();
  assert.equal(h.sent.length, 3);
  h.answerAll();
  // Stopping waits for the records of the attempts answered.
  const stopped = h.worker.stop(5000);
  await turns();
  assert.equal(h.recorded.length, 0);
  h.openStore();
  await stopped;
  assert.deepEqual(h.recorded.map((o) => o.attempt.outcome), ['delivered', 'delivered', 'delivered']);
});

test('a store that records slowly slows sending down: at most four times the node\'s bound wait unrecorded', async () => {
  const w = webhook('w1', 'https://one.example/hook');
  const h = harness({ concurrency: 2, hostConcurrency: 2 }, [w]);
  h.closeStore();
  h.worker.take(Array.from({ length: 20 }, () => delivery(w.id)), Date.now() + 60_000);
  for (let i = 0; i < 10; i++) {
    await turns();
    h.answerAll();
  }
  await turns();
  assert.equal(h.sent.length, 8, 'sends stop with 8 attempts unrecorded');
  h.openStore();
  for (let i = 0; i < 15; i++) {
    await turns();
    h.answerAll();
  }
  await h.worker.stop(5000);
  assert.equal(h.sent.length, 20);
  assert.equal(h.recorded.length, 20);
});

test('a backlog in the store drains at the sending rate: a poll that filled its room is followed by another as soon as there is room', async () => {
  const w = webhook('w1', 'https://one.example/hook');
  const stored = Array.from({ length: 50 }, () => delivery(w.id));
  // One poll a minute: without polling again at once, 8 of the 50 (twice the bound) would go before the next.
  const h = harness({ concurrency: 4, hostConcurrency: 4, stored }, [w]);
  h.worker.start();
  for (let i = 0; i < 40 && h.sent.length < 50; i++) {
    await turns();
    h.answerAll();
  }
  await h.worker.stop(5000);
  assert.equal(stored.length, 0, 'every stored delivery was taken');
  assert.equal(h.sent.length, 50);
});

test('a sleeping host\'s due deliveries stay in the store: the poll does not take them only to skip them again', async () => {
  const asleep = webhook('w-asleep', 'https://asleep.example/hook');
  const awake = webhook('w-awake', 'https://awake.example/hook');
  const hosts = sleptHosts(4);
  assert.ok(hosts.sleepingUntil('asleep.example', Date.now()) > 0);
  const stored = [delivery(asleep.id), delivery(awake.id), delivery(asleep.id), delivery(awake.id)];
  const h = harness({ concurrency: 4, hostConcurrency: 4, stored, hosts }, [asleep, awake]);
  h.worker.start();
  // The first poll runs on a timer: wait for its sends (a loaded machine takes more turns).
  await eventually(() => (h.sent.length >= 2 ? true : undefined), 5000, '2 sent');
  await turns();
  assert.deepEqual(h.excluded[0], ['w-asleep']);
  assert.deepEqual(h.sent.map(hostOfRequest), ['awake.example', 'awake.example']);
  assert.deepEqual(stored.map((d) => d.webhookId), ['w-asleep', 'w-asleep'], 'left in the store, not skipped');
  h.answerAll();
  await h.worker.stop(5000);
  assert.deepEqual(h.recorded.map((o) => o.attempt.outcome), ['delivered', 'delivered']);
});

test('a host awake again after a sleep gets one of its backlog at a time; once it answers 2xx, the rest at once', async () => {
  const back = webhook('w-back', 'https://back.example/hook');
  // It slept, and woke: its sleep of 10 ms ended long ago.
  const hosts = sleptHosts(4, 'back.example', 10, Date.now() - 1000);
  const stored = [delivery(back.id), delivery(back.id), delivery(back.id)];
  const h = harness({ concurrency: 4, hostConcurrency: 4, stored, hosts }, [back]);
  h.worker.start();
  await eventually(() => (h.sent.length >= 1 ? true : undefined), 5000, '1 sent');
  await turns();
  assert.deepEqual(h.probed[0], ['w-back']);
  assert.equal(h.sent.length, 1, 'one probe, the rest left in the store');
  assert.equal(stored.length, 2);
  // Its 2xx: the next poll comes at once (the poll's timer is a minute away) and takes the rest.
  h.answerAll();
  await eventually(() => (h.sent.length >= 3 ? true : undefined), 5000, '3 sent');
  assert.equal(h.sent.length, 3);
  assert.deepEqual(h.probed.at(-1), []);
  h.answerAll();
  await h.worker.stop(5000);
  assert.deepEqual(h.recorded.map((o) => o.attempt.outcome), ['delivered', 'delivered', 'delivered']);
});

test('a host\'s deliveries beyond what the node holds wait in the store: the node\'s memory is bounded, and they go once there is room', async () => {
  const w = webhook('w1', 'https://one.example/hook');
  const stored: DeliveryRecord[] = [];
  const h = harness({ concurrency: 2, hostConcurrency: 2, holdPerHost: 3, stored }, [w]);
  h.worker.start();
  /** What the webhooks' service does with a new event's delivery: held and sent, or written for a poll. */
  const publish = () => {
    const d = delivery(w.id);
    if (h.worker.holds(w)) {
      h.worker.written(w);
      h.worker.take([d], Date.now() + 60_000);
    } else {
      stored.push({ ...d, status: 'pending' });
      h.worker.spilled(w);
    }
    return d.id;
  };
  const published = Array.from({ length: 8 }, publish);
  await turns();
  assert.deepEqual(h.worker.stats(), { inFlight: 2, ready: 3 }, 'two sent, three held: the bound');
  assert.deepEqual(stored.map((d) => d.id), published.slice(5), 'the three that did not fit are in the store');
  assert.equal(h.worker.holds(w), false);
  for (let i = 0; i < 20 && h.sent.length < published.length; i++) {
    h.answerAll();
    await turns();
  }
  assert.deepEqual(h.sent.map((r) => r.headers['webhook-id']).sort(), [...published].sort(), 'each sent once');
  assert.equal(stored.length, 0);
  assert.equal(h.worker.holds(w), true, 'held in memory again');
  h.answerAll();
  await h.worker.stop(5000);
  assert.equal(h.recorded.length, published.length);
});

test('deliveries whose write is under way count against the bound: a burst asked about before its batch is written does not pass it', () => {
  const w = webhook('w1', 'https://one.example/hook');
  const h = harness({ concurrency: 2, hostConcurrency: 2, holdPerHost: 3 }, [w]);
  assert.deepEqual([h.worker.holds(w), h.worker.holds(w), h.worker.holds(w), h.worker.holds(w)], [true, true, true, false]);
  // One write ended (its delivery taken now, or its write failed): room for one more.
  h.worker.written(w);
  assert.equal(h.worker.holds(w), true);
  assert.equal(h.worker.holds(w), false);
});

test('a host that holds its bound does not keep the other hosts\' due deliveries in the store', async () => {
  const slow = webhook('w-slow', 'https://slow.example/hook');
  const fast = webhook('w-fast', 'https://fast.example/hook');
  const retry = delivery(fast.id);
  const stored = [delivery(slow.id), retry];
  const h = harness({ concurrency: 4, hostConcurrency: 2, holdPerHost: 3, stored }, [slow, fast]);
  // The slow host has ten waiting (more than the node's room of eight) and two in flight.
  h.worker.take(Array.from({ length: 12 }, () => delivery(slow.id)), Date.now() + 60_000);
  h.worker.start();
  await eventually(() => (h.sent.length >= 3 ? true : undefined), 5000, '3 sent');
  assert.deepEqual(h.excluded[0], ['w-slow'], 'the full host\'s stored deliveries are left where they are');
  assert.equal(h.sent.at(-1)?.headers['webhook-id'], retry.id, 'the other host\'s retry is taken and sent');
  assert.equal(stored.length, 1);
  for (let i = 0; i < 20 && h.sent.length < 14; i++) {
    h.answerAll();
    await turns();
  }
  await h.worker.stop(5000);
});

test('a sleeping host\'s backlog in the store costs no poll at each delivery of the other hosts', async () => {
  const asleep = webhook('w-asleep', 'https://asleep.example/hook');
  const awake = webhook('w-awake', 'https://awake.example/hook');
  const hosts = sleptHosts(2);
  const stored = [delivery(asleep.id)];
  const h = harness({ concurrency: 4, hostConcurrency: 2, holdPerHost: 3, stored, hosts }, [asleep, awake]);
  h.worker.spilled(asleep);
  h.worker.take(Array.from({ length: 10 }, () => delivery(awake.id)), Date.now() + 60_000);
  for (let i = 0; i < 20 && h.sent.length < 10; i++) {
    h.answerAll();
    await turns();
  }
  assert.equal(h.sent.length, 10);
  assert.deepEqual(h.excluded, [], 'no poll: the only backlog is the sleeping host\'s');
  h.answerAll();
  await h.worker.stop(5000);
});
