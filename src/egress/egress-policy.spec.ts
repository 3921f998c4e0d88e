import { checkResolved, checkUrl, EgressRefusedError, embeddedIpv4, isForbiddenAddress, isHostAllowed, parseAllowList } from './egress-policy';

describe('egress policy', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:1::',
    '::127.0.0.1',
    '::ffff:0:7f00:1', // SIIT's IPv4-translated form of 127.0.0.1
    '::ffff:0:10.0.0.1',
    '64:ff9b:1::7f00:1', // NAT64's local-use prefix: where the IPv4 address sits is the network's choice
    '64:ff9b:1:7f00:1::',
    '100::1', // discard-only
    '100:0:0:1::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    '2001:2::1', // benchmarking
    '2001:db8::1',
    '3fff::1',
    '5f00::1',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.9',
    'not-an-address',
  ])('refuses %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '::ffff:0:808:808',
    '64:ff9b::808:808',
    '2002:808:808::',
    '2001:4860:4860::8888',
  ])('allows the public address %s', (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it('reads the IPv4 address inside IPv6 forms', () => {
    expect(embeddedIpv4('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(embeddedIpv4('::ffff:a00:1')).toBe('10.0.0.1');
    expect(embeddedIpv4('64:ff9b::7f00:1')).toBe('127.0.0.1');
    expect(embeddedIpv4('::ffff:0:7f00:1')).toBe('127.0.0.1');
    expect(embeddedIpv4('::ffff:0:127.0.0.1')).toBe('127.0.0.1');
    expect(embeddedIpv4('2001:db8::1')).toBeNull();
    expect(embeddedIpv4('::1')).toBeNull();
  });

  it('parses host names, addresses and CIDR ranges, and names a bad item', () => {
    const allow = parseAllowList(['Internal.Example.com.', '10.0.0.0/8', '[::1]', 'fd00::/8', '192.168.1.7']);
    expect(isHostAllowed(allow, 'internal.example.com')).toBe(true);
    expect(isHostAllowed(allow, '10.9.9.9')).toBe(true);
    expect(isHostAllowed(allow, '[::1]')).toBe(true);
    expect(isHostAllowed(allow, '192.168.1.8')).toBe(false);
    expect(isHostAllowed(allow, 'other.example.com')).toBe(false);
    expect(() => parseAllowList(['ok.example', 'bad host'])).toThrow(/"bad host"/);
    expect(() => parseAllowList(['10.0.0.0/33'])).toThrow(/not a CIDR/);
    expect(() => parseAllowList(['nothing/8'])).toThrow(/not a CIDR/);
  });

  it('judges every resolved address: one private among public ones refuses the host', () => {
    const none = parseAllowList([]);
    expect(() => checkResolved(none, 'public.example', ['93.184.216.34'])).not.toThrow();
    expect(() => checkResolved(none, 'rebind.example', ['93.184.216.34', '127.0.0.1'])).toThrow(EgressRefusedError);
    // The refusal names the host, never the inside address it resolved to (attack round 11, F-F4).
    expect(() => checkResolved(none, 'postgres', ['172.18.0.2'])).toThrow(/^postgres resolves to a loopback, private or link-local address;/);
    expect(() => checkResolved(none, 'db.internal', ['fd00::5'])).not.toThrow(/fd00::5/);
    expect(() => checkResolved(parseAllowList(['127.0.0.0/8']), 'rebind.example', ['127.0.0.1'])).not.toThrow();
    expect(() => checkResolved(parseAllowList(['rebind.example']), 'rebind.example', ['10.0.0.1'])).not.toThrow();
  });

  it('checks the URL: scheme, credentials, plain http only to listed hosts, literal addresses', () => {
    const allow = parseAllowList(['localhost', '127.0.0.1']);
    const refused = (url: string) => {
      try {
        checkUrl(allow, new URL(url));
        return null;
      } catch (err) {
        return (err as EgressRefusedError).reason;
      }
    };
    expect(refused('https://example.com/mcp')).toBeNull();
    expect(refused('http://localhost:3000/mcp')).toBeNull();
    expect(refused('http://127.0.0.1:3000/mcp')).toBeNull();
    expect(refused('http://example.com/mcp')).toBe('plain_http');
    expect(refused('file:///etc/passwd')).toBe('scheme');
    expect(refused('ftp://example.com/')).toBe('scheme');
    expect(refused('https://user:pw@example.com/')).toBe('scheme');
    expect(refused('https://169.254.169.254/latest/meta-data')).toBe('private_address');
    expect(refused('https://[::ffff:127.0.0.2]/')).toBe('private_address');
    expect(refused('https://0x7f000002/')).toBe('private_address'); // WHATWG URL normalizes it to 127.0.0.2
  });
});
