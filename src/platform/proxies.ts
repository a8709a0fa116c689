import { addressEntry, addressList, unmapped } from './address-list.js';

/**
 * Which reverse proxies are believed when they say, in X-Forwarded-For, whom a request came from
 * (TRUST_PROXY, docs/operations.md, "Behind a reverse proxy"). The HTTP API (Fastify's
 * `trustProxy`) and the device gateway's WebSocket upgrade apply the same rule: the client is the
 * right-most address of the chain (the connection's peer, then X-Forwarded-For read from right to
 * left) that is not a trusted proxy. Anything left of it was written by the client itself and
 * counts for nothing: a client cannot choose the address its requests are counted under.
 */

/** `loopback` stands for a proxy on the same machine. */
const NAMED: Record<string, readonly string[]> = { loopback: ['127.0.0.0/8', '::1/128'] };

export { unmapped };

/**
 * One entry of TRUST_PROXY, normalised (an address, `address/prefix`, or `loopback`); null when
 * it is none of these.
 */
export const proxyEntry = (raw: string): string | null => addressEntry(raw, NAMED);

/** Whether an address is one of the proxies listed; null when none is (TRUST_PROXY=off). */
export function proxyTrust(entries: readonly string[]): ((address: string) => boolean) | null {
  return entries.length === 0 ? null : addressList(entries, NAMED);
}

/**
 * The client's address: the connection's peer, unless it is a trusted proxy, in which case the
 * right-most address of X-Forwarded-For not of a trusted proxy (the left-most when all are), as
 * `proxy-addr` decides it for Fastify.
 */
export function clientAddress(peer: string, forwardedFor: string | string[] | undefined, trusted: ((address: string) => boolean) | null): string {
  const from = unmapped(peer);
  if (!trusted || forwardedFor === undefined || !trusted(from)) return from;
  const chain = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map((a) => a.trim()).filter((a) => a !== '');
  let client = from;
  for (let i = chain.length - 1; i >= 0; i--) {
    client = unmapped(chain[i] as string);
    if (!trusted(client)) return client;
  }
  return client;
}
