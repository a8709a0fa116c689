import { BlockList, isIP } from 'node:net';

/**
 * Lists of IP addresses and CIDR ranges, as settings give them (TRUST_PROXY, WEBHOOK_ALLOW_PRIVATE):
 * each entry an address (that address alone) or `address/prefix`, or a name the caller defines
 * (`loopback` for proxies).
 */

/** One entry, normalised (`10.0.0.0/08` → `10.0.0.0/8`); null when it is neither an address nor a range nor a name. */
export function addressEntry(raw: string, named: Readonly<Record<string, readonly string[]>> = {}): string | null {
  const entry = raw.trim().toLowerCase();
  if (entry in named) return entry;
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

/** Whether an address is in the list of normalised entries (names expanded through `named`). */
export function addressList(entries: readonly string[], named: Readonly<Record<string, readonly string[]>> = {}): (address: string) => boolean {
  const list = new BlockList();
  for (const entry of entries.flatMap((e) => named[e] ?? [e])) {
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
