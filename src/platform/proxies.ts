import { BlockList, isIP } from 'node:net';

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

/**
 * One entry of TRUST_PROXY, normalised (an address, `address/prefix`, or `loopback`); null when
 * it is none of these.
 */
export function proxyEntry(raw: string): string | null {
  const entry = raw.trim().toLowerCase();
  if (entry in NAMED) return entry;
  const [address, prefix, extra] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return null;
  if (prefix === undefined) return address as string;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > (family === 4 ? 32 : 128)) return null;
  return `${address}/${Number(prefix)}`;
}

/** An IPv4 address written as IPv6 (`::ffff:10.0.0.1`, how a dual-stack socket reports it) as IPv4. */
export function unmapped(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** Whether an address is one of the proxies listed; null when none is (TRUST_PROXY=off). */
export function proxyTrust(entries: readonly string[]): ((address: string) => boolean) | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries.flatMap((e) => NAMED[e] ?? [e])) {
    const [address, prefix] = entry.split('/') as [string, string | undefined];
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return (address) => {
    const a = unmapped(address);
    const family = isIP(a);
    return family !== 0 && list.check(a, family === 4 ? 'ipv4' : 'ipv6');
  };
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
