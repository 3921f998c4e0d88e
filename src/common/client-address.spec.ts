import { addressGroupOf } from './client-address';

describe('addressGroupOf: the unit the per-address limits count (attack round 15, R-F1)', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(addressGroupOf('203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts every address of one IPv6 /64 as one client, whatever its spelling', () => {
    const group = addressGroupOf('2001:db8:1:2::1');
    expect(group).toBe('2001:db8:1:2::/64');
    for (const a of ['2001:db8:1:2::ffff', '2001:0DB8:0001:0002:abcd:ef01:2345:6789', '2001:db8:1:2:0:0:0:1', '2001:db8:1:2::1%eth0']) {
      expect(addressGroupOf(a)).toBe(group);
    }
    expect(addressGroupOf('2001:db8:1:3::1')).not.toBe(group);
    expect(addressGroupOf('::1')).toBe('0:0:0:0::/64');
  });

  it('reads an IPv4 client seen through a dual-stack socket as its IPv4 address', () => {
    expect(addressGroupOf('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroupOf('::ffff:cb00:7107')).toBe('203.0.113.7');
  });

  it('leaves what is not an address as it is', () => {
    expect(addressGroupOf('unknown')).toBe('unknown');
    expect(addressGroupOf('')).toBe('');
  });
});
