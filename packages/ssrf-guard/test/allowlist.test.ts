import { checkUrl, parseAllowlist } from '../src/index';
import { staticLookup } from './support/lookup';

const lookup = staticLookup({ localhost: ['127.0.0.1', '::1'], 'db.internal': ['10.1.2.3'] });

describe('parseAllowlist', () => {
  it('When the variable is unset or blank, then nothing is allowlisted', () => {
    expect(parseAllowlist(undefined)).toEqual([]);
    expect(parseAllowlist('  , ')).toEqual([]);
  });

  it('When entries are separated by commas and spaces, then each is returned normalised', () => {
    expect(parseAllowlist('127.0.0.1, LocalHost.,10.0.0.0/8  [::1] fd00::/8')).toEqual([
      '127.0.0.1',
      'localhost',
      '10.0.0.0/8',
      '::1',
      'fd00::/8',
    ]);
  });

  it.each(['10.0.0.0/33', 'bad$host!', '2130706433', 'a..b', '-x.example'])(
    'When an entry is %p, then a TypeError names it',
    (entry) => {
      expect(() => parseAllowlist(`127.0.0.1,${entry}`)).toThrow(
        new RegExp(entry.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')),
      );
    },
  );
});

describe('allowlist', () => {
  it('When no allowlist is given, then a loopback literal is refused', async () => {
    const result = await checkUrl('http://127.0.0.1:8080/hook');
    expect(result.ok).toBe(false);
  });

  it('When the IP is allowlisted, then that literal is allowed', async () => {
    const result = await checkUrl('http://127.0.0.1:8080/hook', { allowlist: ['127.0.0.1'] });
    expect(result).toMatchObject({ ok: true, addresses: ['127.0.0.1'] });
  });

  it('When only 127.0.0.1 is allowlisted, then a host resolving to both 127.0.0.1 and ::1 is refused for ::1', async () => {
    const result = await checkUrl('http://localhost/', { allowlist: ['127.0.0.1'] }, { lookup });
    expect(result.ok).toBe(false);
    if (!result.ok)
      expect(result.error).toMatchObject({ reason: 'address', address: '::1', addressClass: 'loopback' });
  });

  it('When the host name is allowlisted, then all of its addresses are allowed, case-insensitively', async () => {
    const result = await checkUrl('http://LOCALHOST:3000/', { allowlist: ['localhost'] }, { lookup });
    expect(result).toMatchObject({ ok: true, addresses: ['127.0.0.1', '::1'] });
  });

  it('When a CIDR block is allowlisted, then addresses inside it are allowed and others are not', async () => {
    const policy = { allowlist: ['10.0.0.0/8'] };
    expect((await checkUrl('http://db.internal/', policy, { lookup })).ok).toBe(true);
    expect((await checkUrl('http://10.255.0.1/', policy)).ok).toBe(true);
    const outside = await checkUrl('http://192.168.0.1/', policy);
    expect(outside.ok).toBe(false);
  });

  it('When an IPv4 address is allowlisted, then its IPv4-mapped IPv6 form is allowed too', async () => {
    const result = await checkUrl('http://[::ffff:127.0.0.1]/', { allowlist: ['127.0.0.1'] });
    expect(result.ok).toBe(true);
  });

  it('When an IPv6 address is allowlisted, then the bracketed literal is allowed', async () => {
    expect((await checkUrl('http://[::1]:9000/', { allowlist: ['::1'] })).ok).toBe(true);
  });

  it('When a metadata host name is allowlisted explicitly, then it is allowed', async () => {
    const meta = staticLookup({ 'metadata.google.internal': ['169.254.169.254'] });
    const blocked = await checkUrl('http://metadata.google.internal/', {}, { lookup: meta });
    expect(blocked.ok).toBe(false);
    const allowed = await checkUrl(
      'http://metadata.google.internal/',
      { allowlist: ['metadata.google.internal'] },
      { lookup: meta },
    );
    expect(allowed.ok).toBe(true);
  });

  it('When the policy holds an invalid entry, then checkUrl rejects with a TypeError', async () => {
    await expect(checkUrl('http://example.com/', { allowlist: ['10.0.0.0/99'] })).rejects.toThrow(TypeError);
  });
});
