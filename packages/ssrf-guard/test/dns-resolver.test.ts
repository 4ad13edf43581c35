import { lookup as lookupOnThreadPool } from 'node:dns/promises';
import { readFile } from 'node:fs/promises';
import { checkUrl, resolveHostAddresses, type CheckUrlResult, type SsrfBlockedError } from '../src/index';
import { startDnsServer, type TestDnsServer } from './support/dns-server';

// checkUrl's default resolver (dns.promises.Resolver) against a real DNS server on UDP 127.0.0.1.
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer({
    'hooks.example.test': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    'v6only.example.test': ['2606:2800:220:1:248:1893:25c8:1946'],
    'internal.example.test': ['10.0.0.5'],
    'imds.example.test': ['169.254.169.254'],
    'split.example.test': ['93.184.216.34', 'fd00::1'],
    'nodata.example.test': [],
    ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`slow${i}.example.test`, ['93.184.216.34']])),
  });
});
afterEach(() => {
  dns.release();
  dns.mode = 'answer';
});
afterAll(() => dns.close());

function check(url: string, timeoutMs = 2000, allowlist: string[] = []): Promise<CheckUrlResult> {
  return checkUrl(url, { allowlist }, { label: 'webhook_url', dns: { servers: [dns.server], timeoutMs } });
}

async function refusal(url: string, timeoutMs?: number, allowlist?: string[]): Promise<SsrfBlockedError> {
  const result = await check(url, timeoutMs, allowlist);
  if (result.ok) throw new Error(`expected ${url} to be refused, got ${result.addresses.join(',')}`);
  return result.error;
}

describe('checkUrl with the default DNS resolver', () => {
  it('When a name resolves to public A and AAAA addresses, then it passes with both, asked in parallel', async () => {
    const before = dns.queries.length;
    const result = await check('https://hooks.example.test/jobs');
    expect(result).toMatchObject({
      ok: true,
      addresses: ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    });
    expect(dns.queries.slice(before)).toEqual(
      expect.arrayContaining([
        { name: 'hooks.example.test', type: 'A' },
        { name: 'hooks.example.test', type: 'AAAA' },
      ]),
    );
  });

  it('When a name has only an AAAA record, then the A lookup finding no data does not refuse it', async () => {
    expect(await check('https://v6only.example.test/')).toMatchObject({
      ok: true,
      addresses: ['2606:2800:220:1:248:1893:25c8:1946'],
    });
  });

  it.each([
    ['internal.example.test', '10.0.0.5', 'private'],
    ['imds.example.test', '169.254.169.254', 'metadata'],
    ['split.example.test', 'fd00::1', 'unique-local'],
  ])('When %s resolves to %s, then it is refused as %s', async (host, address, addressClass) => {
    const error = await refusal(`http://${host}/hook`);
    expect(error).toMatchObject({ reason: 'address', address, addressClass });
    expect(error.message).toBe(`webhook_url resolves to ${address} (${addressClass}), which is not allowed`);
  });

  it('When the name does not exist (NXDOMAIN), then it is refused for dns as not resolving', async () => {
    const error = await refusal('https://no-such-host.example.test/');
    expect(error.reason).toBe('dns');
    expect(error.message).toBe('webhook_url host no-such-host.example.test does not resolve (ENOTFOUND)');
  });

  it('When the name exists with neither A nor AAAA data, then it is refused for dns as not resolving', async () => {
    const error = await refusal('https://nodata.example.test/');
    expect(error.reason).toBe('dns');
    expect(error.message).toMatch(/^webhook_url host nodata\.example\.test does not resolve \(E\w+\)$/);
  });

  it('When the name server never answers, then the URL is refused within the timeout, saying so', async () => {
    dns.mode = 'silent';
    const before = dns.queries.length;
    const started = performance.now();
    const error = await refusal('https://hooks.example.test/', 300);
    const elapsed = performance.now() - started;
    expect(error.reason).toBe('dns');
    expect(error.message).toBe('webhook_url host hooks.example.test did not resolve within 300 ms');
    expect(elapsed).toBeLessThan(300 + 1500);
    expect(dns.queries.length).toBeGreaterThan(before);
  });

  it.each(['http://localhost:8080/hook', 'http://LocalHost./x', 'http://api.localhost/x'])(
    'When the host of %s is a localhost name, then it is refused as loopback and no DNS query is sent',
    async (url) => {
      const before = dns.queries.length;
      expect(await refusal(url)).toMatchObject({
        reason: 'address',
        address: '127.0.0.1',
        addressClass: 'loopback',
      });
      expect(dns.queries.length).toBe(before);
    },
  );

  it('When localhost is allowlisted, then it passes with its loopback addresses and no DNS query is sent', async () => {
    const before = dns.queries.length;
    expect(await check('http://localhost:3000/', 2000, ['localhost'])).toMatchObject({
      ok: true,
      addresses: ['127.0.0.1', '::1'],
    });
    expect(dns.queries.length).toBe(before);
  });

  it('When a host name is allowlisted, then it passes without being resolved', async () => {
    const before = dns.queries.length;
    expect(await check('http://receiver.internal:9000/', 2000, ['receiver.internal'])).toMatchObject({
      ok: true,
      addresses: [],
    });
    expect(dns.queries.length).toBe(before);
  });

  it('When 8 checks wait on withheld DNS answers, then thread-pool work (getaddrinfo, file reads) still completes before the answers are released', async () => {
    dns.mode = 'hold';
    const before = dns.queries.length;
    const checks = Array.from({ length: 8 }, (_, i) => check(`https://slow${i}.example.test/`, 10_000));
    let checksSettled = false;
    void Promise.allSettled(checks).then(() => (checksSettled = true));
    await dns.receivedAtLeast(before + 16);

    // Four threads serve getaddrinfo and fs; 8 blocked lookups there would starve both.
    const poolWork = await Promise.all([
      ...Array.from({ length: 8 }, () => lookupOnThreadPool('localhost')),
      readFile(__filename, 'utf8'),
    ]);
    expect(poolWork).toHaveLength(9);
    expect(checksSettled).toBe(false);
    expect(dns.held()).toBeGreaterThanOrEqual(16);

    dns.release();
    const results = await Promise.all(checks);
    expect(results.every((r) => r.ok)).toBe(true);
  });
});

describe('resolveHostAddresses', () => {
  it('When options are out of range, then a TypeError names them', async () => {
    await expect(resolveHostAddresses('hooks.example.test', { timeoutMs: 0 })).rejects.toThrow(TypeError);
    await expect(resolveHostAddresses('hooks.example.test', { tries: 0 })).rejects.toThrow(/tries/);
    await expect(
      checkUrl('https://hooks.example.test/', undefined, { dns: { timeoutMs: 1.5 } }),
    ).rejects.toThrow(/timeoutMs/);
  });

  it('When the server answers, then every address of both families is returned', async () => {
    expect(await resolveHostAddresses('hooks.example.test', { servers: [dns.server] })).toEqual({
      ok: true,
      addresses: ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    });
  });
});
