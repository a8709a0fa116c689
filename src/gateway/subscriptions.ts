import { mayDeviceSubscribe, topicMatches } from '../domain/device-protocol.js';
import type { Session } from './session.js';

/** A granted filter; the cloud sends at the lower of 1 and the QoS granted. */
export interface Subscription { filter: string; qos: 0 | 1 }

const MAX_SUBSCRIPTIONS = 32;
/** Topics whose best subscription a session remembers before it starts over. */
const MAX_REMEMBERED = 256;

/**
 * Grants a filter to the device: only its own topics, no wildcard before them
 * (docs/device-protocol.md, "Topics"), at most MAX_SUBSCRIPTIONS. Answers the QoS granted, or
 * undefined when refused. A filter subscribed again replaces the earlier one [MQTT-3.8.4-3].
 */
export function grant(s: Session, filter: string, qos: number): 0 | 1 | undefined {
  const list = s.subscriptions;
  if (!mayDeviceSubscribe(s.deviceId as string, filter) || (list?.length ?? 0) >= MAX_SUBSCRIPTIONS) return undefined;
  const granted: 0 | 1 = qos >= 1 ? 1 : 0;
  if (list) {
    const i = list.findIndex((x) => x.filter === filter);
    if (i >= 0) list.splice(i, 1);
    list.push({ filter, qos: granted });
  } else {
    s.subscriptions = [{ filter, qos: granted }];
  }
  changed(s);
  return granted;
}

/** Drops the filters named (exactly, not by matching [MQTT-3.10.4-1]). */
export function revoke(s: Session, filters: string[]): void {
  const list = s.subscriptions?.filter((x) => !filters.includes(x.filter));
  s.subscriptions = list?.length ? list : null;
  changed(s);
}

function changed(s: Session): void {
  s.matched = null;
  const id = s.deviceId as string;
  s.hearsEvents = s.subscriptions?.some((x) => mayMatchEvents(x.filter, id)) ?? false;
}

/**
 * Whether a filter matches any topic of an event sent to the device, `devices/<id>/cloud/events/<name>`
 * (docs/device-protocol.md, "Events"): `devices/<id>/cloud/#` and `…/cloud/events/alarm` do,
 * `…/cloud/call` and `…/cloud/+` do not. The gateway looks only at the devices that hear events
 * when one is published, instead of making and matching a topic for every device in its scope.
 */
export function mayMatchEvents(filter: string, deviceId: string): boolean {
  const levels = filter.split('/');
  const prefix = ['devices', deviceId, 'cloud', 'events'];
  for (let i = 0; i < prefix.length; i++) {
    const level = levels[i];
    if (level === '#') return true;
    if (level === undefined || (level !== '+' && level !== prefix[i])) return false;
  }
  // An event's name is one level or more below `events`.
  return levels.length > prefix.length;
}

/**
 * The subscription of the highest QoS that matches a topic, remembered until the subscriptions
 * change: every call and every event to the device asks. A connection without subscriptions
 * carries no map.
 */
export function subscriptionFor(s: Session, topic: string): Subscription | undefined {
  const list = s.subscriptions;
  if (list === null) return undefined;
  let best = s.matched;
  if (best === null || best.size >= MAX_REMEMBERED) best = s.matched = new Map();
  const known = best.get(topic);
  if (known !== undefined || best.has(topic)) return known;
  let found: Subscription | undefined;
  for (const sub of list) if (topicMatches(sub.filter, topic) && (!found || sub.qos > found.qos)) found = sub;
  best.set(topic, found);
  return found;
}
