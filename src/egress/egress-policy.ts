import { BlockList, isIP } from 'node:net';

/**
 * The rule every outbound connection obeys, as pure functions so it can be tested without a
 * socket. An address is refused when it is loopback, private, link-local, unspecified (or any
 * other range that reaches inside the operator's network rather than the internet), unless the
 * operator listed its host name, the address, or a range holding it in EGRESS_ALLOWED_HOSTS.
 */

export type EgressRefusalReason = 'private_address' | 'plain_http' | 'scheme' | 'redirect';

/** `code` is what callers branch on (API.md: a call refused later fails with `egress_refused`). */
export class EgressRefusedError extends Error {
  readonly code = 'egress_refused';
  constructor(
    message: string,
    readonly reason: EgressRefusalReason,
  ) {
    super(message);
    this.name = 'EgressRefusedError';
  }
}

/** A connect, response-header or whole-exchange timeout; `code` names it for the callers that map it. */
export class EgressTimeoutError extends Error {
  readonly code = 'timeout';
  constructor(message: string) {
    super(message);
    this.name = 'EgressTimeoutError';
  }
}

/** A response body longer than its caller's `maxBytes`: the connection was closed rather than read on. */
export class EgressTooLargeError extends Error {
  readonly code = 'response_too_large';
  constructor(
    message: string,
    readonly maxBytes: number,
  ) {
    super(message);
    this.name = 'EgressTooLargeError';
  }
}

function addRanges(list: BlockList, ranges: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  for (const [net, prefix, type] of ranges) list.addSubnet(net, prefix, type);
  return list;
}

/**
 * Ranges that are not the public internet: the IANA IPv4 and IPv6 special-purpose address
 * registries' entries that are not globally reachable (RFC 6890 and its updates), and the few
 * that are reachable only through some local device (NAT64's local-use prefix, Teredo). An IPv6
 * address that carries an IPv4 address a connection would reach is judged again as that address.
 */
const FORBIDDEN = addRanges(new BlockList(), [
  ['0.0.0.0', 8, 'ipv4'], // "this network", 0.0.0.0 connects to the local host
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT, often a provider's internal network
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'], // link-local: cloud metadata services live here
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'], // documentation (TEST-NET-1..3): never routed, sometimes used inside
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, and the broadcast address
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  // NAT64's local-use prefix (RFC 8215): the network chooses where in it the IPv4 address sits,
  // so it cannot be read back; it reaches whatever IPv4 space the local translator serves.
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'], // discard-only
  ['100:0:0:1::', 64, 'ipv6'], // dummy prefix (RFC 9780)
  // IETF protocol assignments, Teredo (2001::/32, reached through a relay to a client behind a NAT)
  // and benchmarking among them; its few globally reachable entries are anycast infrastructure.
  ['2001::', 23, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['3fff::', 20, 'ipv6'], // documentation (RFC 9637)
  ['5f00::', 16, 'ipv6'], // segment routing SIDs (RFC 9602)
  ['fc00::', 7, 'ipv6'], // unique local
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated, still routed by some)
  ['ff00::', 8, 'ipv6'], // multicast
]);

export interface AllowList {
  hosts: Set<string>;
  ranges: BlockList;
  /** Hosts (names, or addresses as a URL's host reads) listed at some ports only (`127.0.0.1:11434`). */
  ports: Map<string, Set<number>>;
  /** As the operator wrote them, for messages. */
  items: string[];
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$/;

/**
 * Parses EGRESS_ALLOWED_HOSTS; throws naming the first item that is neither host, address, CIDR
 * nor a host or address with a port. A host without a port is allowed at every port, so listing
 * the node's own `127.0.0.1` for a local model server let every organization's URLs reach every
 * loopback service (attack round 11, F-F6): `127.0.0.1:11434` allows that port alone.
 */
export function parseAllowList(items: string[]): AllowList {
  const hosts = new Set<string>();
  const ranges = new BlockList();
  const ports = new Map<string, Set<number>>();
  for (const raw of items) {
    const item = raw.trim().toLowerCase();
    if (item === '') continue;
    const withPort = /^(\[[^\]]+\]|[^:[\]/]+):(\d{1,5})$/.exec(item);
    if (withPort) {
      const port = Number(withPort[2]);
      const host = withPort[1];
      if (!(port >= 1 && port <= 65535) || (isIP(stripBrackets(host)) === 0 && !HOST_NAME.test(host))) {
        throw new Error(`"${raw.trim()}" is not a host name or IP address with a port from 1 to 65535`);
      }
      // Keyed as a URL's host reads once normalized: `[::1]` and `::1`, `localhost.` and `localhost` alike.
      const key = normalizeHost(new URL(`http://${host}/`).hostname);
      ports.set(key, (ports.get(key) ?? new Set()).add(port));
      continue;
    }
    const slash = item.indexOf('/');
    if (slash >= 0) {
      const net = stripBrackets(item.slice(0, slash));
      const prefixText = item.slice(slash + 1);
      const family = isIP(net);
      const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
      if (family === 0 || !(prefix >= 0 && prefix <= (family === 4 ? 32 : 128))) throw new Error(`"${raw.trim()}" is not a CIDR range`);
      ranges.addSubnet(net, prefix, family === 4 ? 'ipv4' : 'ipv6');
      continue;
    }
    const address = stripBrackets(item);
    const family = isIP(address);
    if (family !== 0) {
      ranges.addAddress(address, family === 4 ? 'ipv4' : 'ipv6');
      hosts.add(address);
      continue;
    }
    if (!HOST_NAME.test(item)) throw new Error(`"${raw.trim()}" is not a host name, IP address, CIDR range or host with a port`);
    hosts.add(item.replace(/\.$/, ''));
  }
  return { hosts, ranges, ports, items: items.map((i) => i.trim()).filter(Boolean) };
}

/** The port a URL connects to. */
export function portOf(url: URL): number {
  return url.port !== '' ? Number(url.port) : url.protocol === 'http:' ? 80 : 443;
}

export function splitAllowedHosts(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** The host of a URL as a connection sees it: lower case, no brackets, no trailing dot. */
export function normalizeHost(hostname: string): string {
  return stripBrackets(hostname.toLowerCase()).replace(/\.$/, '');
}

/**
 * The IPv4 address an IPv6 address carries, when it carries one a connection would reach
 * (IPv4-mapped, SIIT's IPv4-translated, IPv4-compatible, NAT64's well-known prefix, 6to4): such an
 * address is judged as that IPv4 address.
 */
export function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::ffff:0:|::|64:ff9b::)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted && isIP(dotted[1]) === 4) return dotted[1];
  const groups = expandIpv6(lower);
  if (!groups) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zero(0, 5) && groups[5] === 0xffff) return v4(groups[6], groups[7]); // ::ffff:a.b.c.d
  if (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6], groups[7]); // ::ffff:0:a.b.c.d (RFC 2765)
  if (zero(0, 6) && (groups[6] !== 0 || groups[7] > 1)) return v4(groups[6], groups[7]); // ::a.b.c.d (deprecated)
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return v4(groups[6], groups[7]); // NAT64
  if (groups[0] === 0x2002) return v4(groups[1], groups[2]); // 6to4
  return null;
}

/** The eight 16-bit groups of an IPv6 address (an IPv4 tail written dotted included); null for anything else. */
export function expandIpv6(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address;
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const parse = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? [] : new Array(8 - h.length - t.length).fill(0);
  const groups = [...h, ...fill, ...t];
  return groups.length === 8 ? groups : null;
}

/** True when the address reaches somewhere other than the public internet. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return FORBIDDEN.check(address, 'ipv4');
  if (family !== 6) return true; // not an address at all: never connect to it
  if (FORBIDDEN.check(address, 'ipv6')) return true;
  const v4 = embeddedIpv4(address);
  return v4 !== null && FORBIDDEN.check(v4, 'ipv4');
}

function inAllowedRange(allow: AllowList, address: string): boolean {
  const family = isIP(address);
  if (family === 4) return allow.ranges.check(address, 'ipv4');
  if (family !== 6) return false;
  if (allow.ranges.check(address, 'ipv6')) return true;
  const v4 = embeddedIpv4(address);
  return v4 !== null && allow.ranges.check(v4, 'ipv4');
}

/**
 * The host itself is listed (by name, or as an address or inside a listed range), or listed at
 * `port`; a host listed at some ports only is not allowed when the port is not known.
 */
export function isHostAllowed(allow: AllowList, hostname: string, port?: number): boolean {
  const host = normalizeHost(hostname);
  if (allow.hosts.has(host)) return true;
  if (port !== undefined && allow.ports.get(host)?.has(port)) return true;
  return isIP(host) !== 0 && inAllowedRange(allow, host);
}

/**
 * Judges the addresses a host name resolved to. Every one is checked, since the connection may
 * use any of them; the host's own listing allows all of them (the operator named that host). The
 * refusal does not name the address: it is shown to the organization (an answer, a call's error,
 * its model), and the inside of the operator's network is not the organization's to map (attack
 * round 11, F-F4: `https://postgres/` answered with the database's container address).
 */
export function checkResolved(allow: AllowList, hostname: string, addresses: string[], port?: number): void {
  if (isHostAllowed(allow, hostname, port)) return;
  for (const address of addresses) {
    if (isForbiddenAddress(address) && !inAllowedRange(allow, address)) {
      throw new EgressRefusedError(
        `${normalizeHost(hostname)} resolves to a loopback, private or link-local address; list the host in EGRESS_ALLOWED_HOSTS to allow it`,
        'private_address',
      );
    }
  }
}

/** What can be judged from the URL alone: scheme, plain http, an address written as the host. */
export function checkUrl(allow: AllowList, url: URL): void {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new EgressRefusedError(`${url.protocol} URLs are not allowed; use https:`, 'scheme');
  }
  if (url.username || url.password) {
    // Credentials in a URL end up in logs and proxies; they belong in a credential field.
    throw new EgressRefusedError('URLs with a user name or password are not allowed; put credentials in a credential field', 'scheme');
  }
  const port = portOf(url);
  if (url.protocol === 'http:' && !isHostAllowed(allow, url.hostname, port)) {
    throw new EgressRefusedError(`plain http: is allowed only to hosts listed in EGRESS_ALLOWED_HOSTS; ${normalizeHost(url.hostname)} is not`, 'plain_http');
  }
  const host = normalizeHost(url.hostname);
  if (isIP(host) !== 0) checkResolved(allow, host, [host], port);
}
