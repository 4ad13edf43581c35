import fc from 'fast-check';
import { assertSafeUrl, checkUrl, isSsrfBlockedError, SsrfBlockedError } from '../src/index';
import { staticLookup } from './support/lookup';

const lookup = staticLookup({
  'example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'internal.example.com': ['10.0.0.7'],
  'mixed.example.com': ['93.184.216.34', '192.168.1.20'],
  'metadata.example.com': ['169.254.169.254'],
});

async function refusal(
  url: string,
  options: Parameters<typeof checkUrl>[2] = { lookup },
): Promise<SsrfBlockedError> {
  const result = await checkUrl(url, undefined, options);
  if (result.ok) throw new Error(`expected ${url} to be refused, got ${result.addresses.join(',')}`);
  return result.error;
}

describe('checkUrl URL forms', () => {
  it('When a public host name is given, then the parsed URL and every resolved address are returned', async () => {
    const result = await checkUrl('https://Example.com/hooks?x=1', undefined, { lookup });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.url.href).toBe('https://example.com/hooks?x=1');
    expect(result.addresses).toEqual(['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946']);
  });

  it.each([
    ['http://2130706433/', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.1/', '127.0.0.1'],
    ['http://0x0a000001/', '10.0.0.1'],
  ])('When the URL is %s (an odd IPv4 form), then it is refused as %s', async (url, address) => {
    const error = await refusal(url);
    expect(error).toMatchObject({ reason: 'address', address });
  });

  it.each([
    ['http://[::1]:8080/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://[::ffff:a9fe:a9fe]/', 'metadata'],
    ['http://[fd00:ec2::254]/latest/meta-data/', 'metadata'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://[fc00::1]/', 'unique-local'],
  ])('When the URL is the bracketed IPv6 literal %s, then it is refused as %s', async (url, addressClass) => {
    const error = await refusal(url);
    expect(error).toMatchObject({ reason: 'address', addressClass });
  });

  it('When the URL is a loopback literal, then the message names the field, the address and its class', async () => {
    const error = await refusal('http://127.0.0.1:3000/x', { lookup, label: 'webhook_url' });
    expect(error.message).toBe('webhook_url points to 127.0.0.1 (loopback), which is not allowed');
    expect(error.url).toBe('http://127.0.0.1:3000/x');
  });

  it('When the URL carries user:password@, then it is refused for credentials before any lookup and the password is masked', async () => {
    const fresh = staticLookup({ 'example.com': ['93.184.216.34'] });
    const error = await refusal('https://user:s3cret@example.com/', { lookup: fresh });
    expect(error.reason).toBe('credentials');
    expect(error.url).not.toContain('s3cret');
    expect(fresh.calls).toEqual([]);
  });

  it('When the URL carries only a user name, then it is refused for credentials', async () => {
    expect((await refusal('https://token@example.com/')).reason).toBe('credentials');
  });

  it.each([
    'ftp://example.com/file',
    'file:///etc/passwd',
    'gopher://example.com/',
    'javascript:alert(1)',
    'data:text/plain,hi',
  ])('When the scheme of %s is not http or https, then it is refused for scheme', async (url) => {
    expect((await refusal(url)).reason).toBe('scheme');
  });

  it.each(['not a url', '', '/relative/path', 'http://', 'http://exa mple.com/'])(
    'When the input %p is not an absolute URL, then it is refused as invalid_url',
    async (url) => {
      expect((await refusal(url)).reason).toBe('invalid_url');
    },
  );

  it('When a host name resolves to a private address, then it is refused with that address', async () => {
    const error = await refusal('https://internal.example.com/hook', { lookup, label: 'webhook_url' });
    expect(error).toMatchObject({ reason: 'address', address: '10.0.0.7', addressClass: 'private' });
    expect(error.message).toBe('webhook_url resolves to 10.0.0.7 (private), which is not allowed');
  });

  it('When one of several resolved addresses is private, then the URL is refused', async () => {
    expect(await refusal('https://mixed.example.com/')).toMatchObject({ address: '192.168.1.20' });
  });

  it('When a host name resolves to the metadata address, then it is refused as metadata', async () => {
    expect(await refusal('http://metadata.example.com/')).toMatchObject({ addressClass: 'metadata' });
  });

  it.each([
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://METADATA/',
    'http://metadata.google.internal./',
  ])('When the host is the metadata name in %s, then it is refused without resolving it', async (url) => {
    const before = lookup.calls.length;
    expect(await refusal(url)).toMatchObject({ reason: 'address', addressClass: 'metadata' });
    expect(lookup.calls.length).toBe(before);
  });

  it('When the host name does not resolve, then it is refused for dns with the resolver error as cause', async () => {
    const error = await refusal('https://no-such-host.example/');
    expect(error.reason).toBe('dns');
    expect(error.message).toBe('URL host no-such-host.example does not resolve (ENOTFOUND)');
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('When the resolver returns no addresses, then it is refused for dns', async () => {
    const error = await refusal('https://empty.example/', { lookup: (_h, _o, cb) => cb(null, []) });
    expect(error.reason).toBe('dns');
  });

  it('When no resolver is injected, then localhost is refused as loopback without asking DNS', async () => {
    const result = await checkUrl('http://localhost:1/');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatchObject({ reason: 'address', addressClass: 'loopback' });
  });

  it('When a resolver is injected, then localhost names are still loopback and the resolver is not asked', async () => {
    const before = lookup.calls.length;
    expect(await refusal('http://app.localhost/')).toMatchObject({ reason: 'address', address: '127.0.0.1' });
    expect(lookup.calls.length).toBe(before);
  });

  it('When an injected resolver never answers, then the URL is refused for dns within dns.timeoutMs', async () => {
    const started = performance.now();
    const error = await refusal('https://hang.example/', {
      lookup: () => undefined,
      dns: { timeoutMs: 100 },
      label: 'webhook_url',
    });
    expect(error.reason).toBe('dns');
    expect(error.message).toBe('webhook_url host hang.example did not resolve within 100 ms');
    expect(performance.now() - started).toBeLessThan(100 + 1500);
  });

  it('When an injected resolver fails with something other than not-found, then the message names its code', async () => {
    const eai = Object.assign(new Error('getaddrinfo EAI_AGAIN flaky.example'), { code: 'EAI_AGAIN' });
    const error = await refusal('https://flaky.example/', { lookup: (_h, _o, cb) => cb(eai, []) });
    expect(error).toMatchObject({
      reason: 'dns',
      message: 'URL host flaky.example could not be resolved (EAI_AGAIN)',
    });
  });
});

describe('assertSafeUrl and isSsrfBlockedError', () => {
  it('When the URL is allowed, then the parsed URL is returned', async () => {
    const url = await assertSafeUrl('https://example.com/a', undefined, { lookup });
    expect(url).toBeInstanceOf(URL);
    expect(url.pathname).toBe('/a');
  });

  it('When the URL is refused, then an SsrfBlockedError is thrown and recognised by the guard', async () => {
    const thrown = await assertSafeUrl('http://10.0.0.1/').catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(SsrfBlockedError);
    expect(isSsrfBlockedError(thrown)).toBe(true);
    expect(isSsrfBlockedError(new Error('other'))).toBe(false);
    expect(isSsrfBlockedError('SsrfBlockedError')).toBe(false);
  });
});

describe('private ranges property', () => {
  const ranges: Array<[number, number]> = [
    [0x0a000000, 8], // 10.0.0.0/8
    [0xac100000, 12], // 172.16.0.0/12
    [0xc0a80000, 16], // 192.168.0.0/16
    [0x7f000000, 8], // 127.0.0.0/8
  ];
  const toDotted = (n: number) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
  const addressInRanges = fc
    .constantFrom(...ranges)
    .chain(([base, bits]) =>
      fc.integer({ min: 0, max: 2 ** (32 - bits) - 1 }).map((offset) => toDotted(base + offset)),
    );

  it('When any IPv4 address in 10/8, 172.16/12, 192.168/16 or 127/8 is the URL host (dotted, decimal or IPv4-mapped), then it is refused', async () => {
    await fc.assert(
      fc.asyncProperty(addressInRanges, async (ip) => {
        const decimal = ip.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
        for (const url of [`http://${ip}/`, `https://${decimal}:8443/`, `http://[::ffff:${ip}]/`]) {
          const result = await checkUrl(url);
          if (result.ok || result.error.reason !== 'address') return false;
        }
        return true;
      }),
      { numRuns: 300 },
    );
  });
});
