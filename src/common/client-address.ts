import { isIP } from 'node:net';
import { expandIpv6 } from '../egress/egress-policy';

/**
 * Who a client without a credential is, for the limits counted per address (failed
 * authentications, a share of the unsent answers): its IPv4 address, or the /64 its IPv6 address
 * is in. A /64 is the smallest block an IPv6 network hands out (SLAAC picks an interface's
 * address at random inside it) and any host on it may use as many of its 2^64 addresses as it
 * likes: counted one by one, a client sending each request from a new address was never limited
 * (attack round 15, R-F1). An IPv4 address written as IPv6 (`::ffff:a.b.c.d`, how a dual-stack
 * socket shows an IPv4 client) is that IPv4 address, and every spelling of one IPv6 address the
 * same group.
 */
export function addressGroupOf(address: string): string {
  const unzoned = address.replace(/%.*$/, '');
  if (isIP(unzoned) !== 6) return address;
  const groups = expandIpv6(unzoned.toLowerCase());
  if (!groups) return address;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}
