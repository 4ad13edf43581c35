import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch, request } from 'undici';
import {
  checkUrl,
  createGuardedDispatcher,
  findSsrfBlockedError,
  isSsrfBlockedError,
  SsrfBlockedError,
} from '../src/index';
import { staticLookup } from './support/lookup';

/** A local stand-in for a webhook receiver: counts requests and answers 200 "pong". */
async function startReceiver(): Promise<{ server: Server; port: number; hits: () => number }> {
  let count = 0;
  const server = createServer((_req, res) => {
    count += 1;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('pong');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, hits: () => count };
}

describe('createGuardedDispatcher', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const dispatchers: Array<{ close(): Promise<void> }> = [];
  const track = <T extends { close(): Promise<void> }>(d: T): T => (dispatchers.push(d), d);

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => receiver.server.close(() => resolve()));
  });

  it('When there is no allowlist, then a request to the local server on 127.0.0.1 is refused before it is sent', async () => {
    const dispatcher = track(createGuardedDispatcher());
    const before = receiver.hits();
    const thrown = await request(`http://127.0.0.1:${receiver.port}/hook`, { dispatcher }).catch(
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(SsrfBlockedError);
    expect(thrown).toMatchObject({
      reason: 'address',
      address: '127.0.0.1',
      addressClass: 'loopback',
      url: `http://127.0.0.1:${receiver.port}`,
    });
    expect(receiver.hits()).toBe(before);
  });

  it('When 127.0.0.1 is allowlisted, then the request reaches the local server', async () => {
    const dispatcher = track(
      createGuardedDispatcher({ allowlist: ['127.0.0.1'] }, { connectTimeoutMs: 2000 }),
    );
    const before = receiver.hits();
    const res = await request(`http://127.0.0.1:${receiver.port}/hook`, {
      method: 'POST',
      body: '{}',
      dispatcher,
    });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('pong');
    expect(receiver.hits()).toBe(before + 1);
  });

  it('When a host name passes checkUrl but resolves to 127.0.0.1 at connect time (DNS rebinding), then the connection is refused', async () => {
    const before = receiver.hits();
    const url = `http://rebind.example:${receiver.port}/hook`;
    const checked = await checkUrl(url, undefined, {
      lookup: staticLookup({ 'rebind.example': ['93.184.216.34'] }),
    });
    expect(checked.ok).toBe(true);

    const atConnect = staticLookup({ 'rebind.example': ['127.0.0.1'] });
    const dispatcher = track(createGuardedDispatcher(undefined, { lookup: atConnect }));
    const thrown = await request(url, { dispatcher }).catch((e: unknown) => e);
    expect(isSsrfBlockedError(thrown)).toBe(true);
    expect(thrown).toMatchObject({
      reason: 'address',
      address: '127.0.0.1',
      url: `http://rebind.example:${receiver.port}`,
    });
    expect((thrown as Error).message).toBe(
      'connection to rebind.example resolves to 127.0.0.1 (loopback), which is not allowed',
    );
    expect(atConnect.calls).toEqual(['rebind.example']);
    expect(receiver.hits()).toBe(before);
  });

  it('When the host name is allowlisted, then the connection goes to the address the guarded lookup returned', async () => {
    const lookup = staticLookup({ 'receiver.test': ['127.0.0.1'] });
    const dispatcher = track(createGuardedDispatcher({ allowlist: ['receiver.test'] }, { lookup }));
    const before = receiver.hits();
    const res = await request(`http://receiver.test:${receiver.port}/`, { dispatcher });
    expect(await res.body.text()).toBe('pong');
    expect(lookup.calls).toEqual(['receiver.test']);
    expect(receiver.hits()).toBe(before + 1);
  });

  it('When fetch is refused, then the SsrfBlockedError is the cause of "fetch failed"', async () => {
    const dispatcher = track(createGuardedDispatcher());
    const before = receiver.hits();
    const thrown = await fetch(`http://localhost:${receiver.port}/`, { dispatcher }).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as Error).cause).toBeInstanceOf(SsrfBlockedError);
    expect(findSsrfBlockedError(thrown)).toMatchObject({ reason: 'address', addressClass: 'loopback' });
    expect(receiver.hits()).toBe(before);
  });

  it('When the host is a bracketed IPv6 loopback or a metadata name, then the connection is refused without DNS', async () => {
    const lookup = staticLookup({});
    const dispatcher = track(createGuardedDispatcher(undefined, { lookup }));
    const v6 = await request('http://[::1]:9/', { dispatcher }).catch((e: unknown) => e);
    expect(v6).toMatchObject({ reason: 'address', addressClass: 'loopback', address: '::1' });
    const meta = await request('http://metadata.google.internal/computeMetadata/v1/', { dispatcher }).catch(
      (e: unknown) => e,
    );
    expect(meta).toMatchObject({ reason: 'address', addressClass: 'metadata' });
    expect(lookup.calls).toEqual([]);
  });

  it('When the fetch follows a redirect to a private address, then the redirect hop is refused', async () => {
    const redirector = createServer((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${receiver.port}/internal` }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
    try {
      const port = (redirector.address() as AddressInfo).port;
      // The first hop goes to an allowlisted name; the redirect target is a bare loopback literal.
      const dispatcher = track(
        createGuardedDispatcher(
          { allowlist: ['redirector.test'] },
          { lookup: staticLookup({ 'redirector.test': ['127.0.0.1'] }) },
        ),
      );
      const before = receiver.hits();
      const thrown = await fetch(`http://redirector.test:${port}/`, { dispatcher }).catch((e: unknown) => e);
      expect(findSsrfBlockedError(thrown)).toMatchObject({ address: '127.0.0.1', addressClass: 'loopback' });
      expect(receiver.hits()).toBe(before);
    } finally {
      await new Promise<void>((resolve) => redirector.close(() => resolve()));
    }
  });

  it('When the allowlist holds an invalid entry, then creating the dispatcher throws a TypeError', () => {
    expect(() => createGuardedDispatcher({ allowlist: ['300.0.0.0/8'] })).toThrow(TypeError);
  });
});
