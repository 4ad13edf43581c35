import { clientIpKey } from '../src/rate-limit';

// IPv6 addresses that carry an IPv4 client's address are keyed by that IPv4 address, as if the
// client had come over IPv4 (README of each service, "Security": limits key IPv6 clients by /64).
describe('clientIpKey of IPv6 addresses that embed IPv4', () => {
  it.each([
    // NAT64, the well-known prefix (RFC 6052): the last 32 bits.
    ['64:ff9b::203.0.113.7', '203.0.113.7'],
    ['64:ff9b::cb00:7107', '203.0.113.7'],
    // NAT64, the local-use block (RFC 8215) with a /96 translator prefix.
    ['64:ff9b:1:aa::198.51.100.20', '198.51.100.20'],
    // SIIT's IPv4-translated form (RFC 6145).
    ['::ffff:0:203.0.113.9', '203.0.113.9'],
    // 6to4 (RFC 3056): 2002:AABB:CCDD::/48 is the site of IPv4 AA.BB.CC.DD.
    ['2002:cb00:7107::1', '203.0.113.7'],
    ['2002:cb00:7107:ffff:1:2:3:4', '203.0.113.7'],
    // Teredo (RFC 4380's example): the client's public address is the last 32 bits inverted.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '192.0.2.45'],
  ])('When the client address is %s, then its rate-limit key is the IPv4 address %s', (ip, key) => {
    expect(clientIpKey(ip)).toBe(key);
  });

  it('When two IPv4 clients come through one NAT64 translator, then they get two keys, not one shared /64', () => {
    expect(clientIpKey('64:ff9b::203.0.113.7')).not.toBe(clientIpKey('64:ff9b::198.51.100.20'));
  });

  it('When a 6to4 site uses many of its 65,536 /64 networks, then they all share the one key of its IPv4 address', () => {
    const keys = new Set(
      ['2002:cb00:7107:0::1', '2002:cb00:7107:1::1', '2002:cb00:7107:beef::1', '2002:cb00:7107:ffff::1'].map(
        clientIpKey,
      ),
    );
    expect([...keys]).toEqual(['203.0.113.7']);
  });

  it('When a Teredo client changes its server or port, then its key stays its own IPv4 address', () => {
    expect(clientIpKey('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toBe(
      clientIpKey('2001:0:5ef5:79fd:0:1234:3fff:fdd2'),
    );
    expect(clientIpKey('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toBe(clientIpKey('192.0.2.45'));
  });

  it('When an address is ordinary global IPv6 next to those blocks, then it is still keyed by its /64', () => {
    expect(clientIpKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientIpKey('2003:cb00:7107::1')).toBe('2003:cb00:7107::/64');
    expect(clientIpKey('64:ff9c::1')).toBe('64:ff9c::/64');
  });
});
