import { test } from 'node:test';
import assert from 'node:assert/strict';
import { topicMatches } from '../../src/domain/device-protocol.js';
import { mayMatchEvents } from '../../src/gateway/subscriptions.js';

/*
 * The gateway looks only at the devices whose subscriptions may match an event's topic
 * (`devices/<id>/cloud/events/<name>`). A filter judged unable to match must match none of them:
 * checked against topicMatches over event names of one level and more.
 */
const ID = '0123456789abcdef01234567';
const NAMES = ['alarm', 'alarm/fire', 'sensors/temp/raw', 'x', 'events', 'cloud'];
const topics = NAMES.map((n) => `devices/${ID}/cloud/events/${n}`);

const FILTERS: Array<[string, boolean]> = [
  [`devices/${ID}/#`, true],
  [`devices/${ID}/cloud/#`, true],
  [`devices/${ID}/cloud/events/#`, true],
  [`devices/${ID}/cloud/events/alarm`, true],
  [`devices/${ID}/cloud/events/alarm/#`, true],
  [`devices/${ID}/cloud/events/+`, true],
  [`devices/${ID}/cloud/+/alarm`, true],
  [`devices/${ID}/+/events/#`, true],
  [`devices/${ID}/cloud/events/nothing/of/this`, true],
  [`devices/${ID}/cloud/call`, false],
  [`devices/${ID}/cloud/+`, false],
  [`devices/${ID}/cloud/events`, false],
  [`devices/${ID}/cloud/config/#`, false],
  [`devices/${ID}/cloud/ota/+`, false],
  [`devices/${ID}/+`, false],
  [`devices/${ID}`, false],
];

test('a filter may match events exactly when it is not ruled out by the topic\'s first levels', () => {
  for (const [filter, expected] of FILTERS) {
    assert.equal(mayMatchEvents(filter, ID), expected, filter);
    // Never a filter ruled out that matches an event's topic.
    if (!expected) assert.deepEqual(topics.filter((t) => topicMatches(filter, t)), [], filter);
  }
  // The filters that may match do match some event (of the names above, or of their own name).
  for (const [filter] of FILTERS.filter(([, e]) => e)) {
    const own = filter.replace(/\/#$/, '/x').replace(/\+/g, 'events');
    assert.ok(topics.some((t) => topicMatches(filter, t)) || topicMatches(filter, own), filter);
  }
  assert.equal(mayMatchEvents(`devices/${ID}/cloud/#`, 'another'), false, 'another device\'s id');
});
