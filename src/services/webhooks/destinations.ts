import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { addressList, unmapped } from '../../platform/address-list.js';

/**
 * Where webhooks may send (docs/webhooks.md, "Safe by default"): not to this machine, a private
 * network, link-local addresses or a cloud's metadata service, unless the operator lists the
 * address in WEBHOOK_ALLOW_PRIVATE. Checked when a webhook is saved and again, on the addresses
 * the name resolves to then, for every connection (a name may resolve elsewhere later).
 */
const FORBIDDEN = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) FORBIDDEN.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96]] as const) FORBIDDEN.addSubnet(net, prefix, 'ipv6');
// Metadata services reached at public-looking addresses (Alibaba; AWS's IPv6 one is in fc00::/7 already).
FORBIDDEN.addAddress('100.100.100.200', 'ipv4');

export type DestinationCheck = (address: string) => string | null;

/**
 * Answers why an address is refused, or null when it may be used. `allowed`: the normalised
 * entries of WEBHOOK_ALLOW_PRIVATE (an address allows itself alone, a range the range).
 */
export function destinationCheck(allowed: readonly string[]): DestinationCheck {
  const allow = addressList(allowed);
  return (raw) => {
    const address = unmapped(raw);
    const family = isIP(address);
    if (family === 0) return `${raw} is not an IP address`;
    if (allow(address)) return null;
    if (FORBIDDEN.check(address, family === 4 ? 'ipv4' : 'ipv6')) {
      return `${address} is a loopback, private, link-local or metadata address; an operator may allow it with WEBHOOK_ALLOW_PRIVATE`;
    }
    return null;
  };
}

/** The host of a URL, template tags and all, as the resolver takes it (IPv6 without brackets). */
export function hostOf(url: string): string {
  return hostOfUrl(new URL(url.replace(/\{\{\{?[^}]*\}?\}\}/g, 'x')));
}

/** The host of a parsed URL as the resolver takes it (IPv6 without brackets). */
export function hostOfUrl(url: URL): string {
  const host = url.hostname;
  return host.startsWith('[') ? host.slice(1, -1) : host;
}

/**
 * Resolves a host and checks every address it has; answers the first refusal, or null. A name
 * that does not resolve is refused too: there is nothing to check.
 */
export async function checkHost(host: string, check: DestinationCheck, resolve: typeof lookup = lookup): Promise<string | null> {
  if (isIP(host)) return check(host);
  let addresses: Array<{ address: string }>;
  try {
    addresses = await resolve(host, { all: true, verbatim: true });
  } catch (err) {
    return `${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`;
  }
  for (const a of addresses) {
    const refused = check(a.address);
    if (refused) return `${host} resolves to ${refused}`;
  }
  return null;
}
