import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientAddress, proxyEntry, proxyTrust } from '../../src/platform/proxies.js';

/**
 * Whom a request came from behind trusted proxies (TRUST_PROXY): the rule the HTTP API and the
 * device gateway's WebSocket upgrade share (src/platform/proxies.ts).
 */

test('entries: addresses, CIDR ranges and loopback, normalised; anything else is refused', () => {
  assert.equal(proxyEntry(' 10.0.0.5 '), '10.0.0.5');
  assert.equal(proxyEntry('10.0.0.0/08'), '10.0.0.0/8');
  assert.equal(proxyEntry('2001:DB8::/32'), '2001:db8::/32');
  assert.equal(proxyEntry('Loopback'), 'loopback');
  for (const bad of ['on', '10.0.0.256', '10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/8/8', 'proxy.example.com', '10.0.0.0/-1']) assert.equal(proxyEntry(bad), null, bad);
});

test('trust: listed addresses and ranges, IPv4-mapped IPv6 included; off trusts nobody', () => {
  assert.equal(proxyTrust([]), null);
  const trusted = proxyTrust(['10.0.0.5', '192.168.0.0/16', '2001:db8::/32', 'loopback']);
  assert.ok(trusted);
  for (const yes of ['10.0.0.5', '::ffff:10.0.0.5', '192.168.44.1', '2001:db8:1::7', '127.0.0.1', '127.9.9.9', '::1']) assert.equal(trusted(yes), true, yes);
  for (const no of ['10.0.0.6', '::ffff:10.0.0.6', '192.169.0.1', '2001:db9::1', 'garbage', '']) assert.equal(trusted(no), false, no);
});

test("the client is the right-most address not of a trusted proxy; what a client writes to the left of it changes nothing", () => {
  const trusted = proxyTrust(['10.0.0.5', '10.0.1.0/24']);
  // Straight from the client: the peer, whatever the header says.
  assert.equal(clientAddress('203.0.113.7', '198.51.100.1', trusted), '203.0.113.7');
  assert.equal(clientAddress('::ffff:203.0.113.7', undefined, trusted), '203.0.113.7');
  // Through the proxy: the address it appended.
  assert.equal(clientAddress('10.0.0.5', '203.0.113.7', trusted), '203.0.113.7');
  assert.equal(clientAddress('::ffff:10.0.0.5', '203.0.113.7', trusted), '203.0.113.7');
  // A client that sends its own X-Forwarded-For: the proxy appends the real address after it.
  assert.equal(clientAddress('10.0.0.5', '1.2.3.4, 203.0.113.7', trusted), '203.0.113.7');
  // Two proxies in a row, and the header split over several lines.
  assert.equal(clientAddress('10.0.0.5', '203.0.113.7, 10.0.1.9', trusted), '203.0.113.7');
  assert.equal(clientAddress('10.0.0.5', ['203.0.113.7', '10.0.1.9'], trusted), '203.0.113.7');
  // Only proxies: the left-most.
  assert.equal(clientAddress('10.0.0.5', '10.0.1.9', trusted), '10.0.1.9');
  assert.equal(clientAddress('10.0.0.5', '', trusted), '10.0.0.5');
  // No proxy trusted (TRUST_PROXY=off): the header is never read.
  assert.equal(clientAddress('10.0.0.5', '203.0.113.7', null), '10.0.0.5');
});
