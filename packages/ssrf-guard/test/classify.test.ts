import { classifyAddress, isMetadataHostname, type AddressClass } from '../src/index';

const table: Array<[string, AddressClass]> = [
  // public
  ['8.8.8.8', 'public'],
  ['93.184.216.34', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['172.32.0.1', 'public'],
  ['100.128.0.1', 'public'],
  // loopback
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['2130706433', 'loopback'],
  ['0x7f.1', 'loopback'],
  // private
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['fec0::1', 'private'],
  // link-local
  ['169.254.1.1', 'link-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  // unique-local
  ['fc00::1', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  // carrier-grade NAT
  ['100.64.0.1', 'carrier-grade-nat'],
  ['100.127.255.255', 'carrier-grade-nat'],
  // multicast
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['ff02::1', 'multicast'],
  // unspecified
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['::', 'unspecified'],
  // reserved
  ['255.255.255.255', 'reserved'],
  ['240.0.0.1', 'reserved'],
  ['192.0.2.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.9', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['2001:db8::1', 'reserved'],
  ['2001::1', 'reserved'],
  ['::7f00:1', 'reserved'],
  ['4000::1', 'reserved'],
  // metadata
  ['169.254.169.254', 'metadata'],
  ['169.254.170.2', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['fd00:ec2::254', 'metadata'],
  ['::ffff:169.254.169.254', 'metadata'],
  // IPv4-mapped and IPv4-embedding IPv6 take the class of the IPv4 address
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['[::ffff:10.1.2.3]', 'private'],
  ['::ffff:8.8.8.8', 'public'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['2002:7f00:1::', 'loopback'],
  ['2002:0808:0808::1', 'public'],
];

describe('classifyAddress', () => {
  it.each(table)('When the address is %s, then it is classified as %s', (ip, expected) => {
    expect(classifyAddress(ip)).toBe(expected);
  });

  it.each(['example.com', '', '1.2.3.4.5', '::g', '10.0.0.0/8'])(
    'When the input %p is not an IP address, then a TypeError is thrown',
    (input) => {
      expect(() => classifyAddress(input)).toThrow(TypeError);
    },
  );
});

describe('isMetadataHostname', () => {
  it.each([
    'metadata.google.internal',
    'METADATA.google.internal.',
    'metadata',
    'metadata.goog',
    'instance-data',
  ])('When the host is %s, then it is a metadata host name', (host) => {
    expect(isMetadataHostname(host)).toBe(true);
  });

  it('When the host only contains the word metadata, then it is not a metadata host name', () => {
    expect(isMetadataHostname('metadata.example.com')).toBe(false);
  });
});
