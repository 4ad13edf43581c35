import { createServer as createHttpServer, request as httpRequest, Agent } from 'node:http';
import { createServer as createTcpServer, connect, type Socket } from 'node:net';
import request from 'supertest';
import { cachedFor, closeServer, createBaseApp, createLogger } from '../src/index';
import { metricValue, TcpProxy, waitFor } from '../src/testing';

const logger = createLogger({ name: 'test', level: 'silent' });

describe('/readyz timeout', () => {
  it('When the readiness check hangs, then /readyz answers 503 once its timeout passed', async () => {
    const app = createBaseApp({
      logger,
      isReady: () => new Promise<boolean>(() => undefined),
      readyTimeoutMs: 200,
    });
    const started = Date.now();
    const res = await request(app).get('/readyz');
    expect(res.status).toBe(503);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('When the readiness check throws, then 503; when it answers true in time, then 200', async () => {
    const failing = createBaseApp({ logger, isReady: () => Promise.reject(new Error('db down')) });
    expect((await request(failing).get('/readyz')).status).toBe(503);
    const ok = createBaseApp({ logger, isReady: async () => true });
    expect((await request(ok).get('/readyz')).status).toBe(200);
  });
});

describe('closeServer', () => {
  it('When a keep-alive client has a request in flight, then it gets its answer and the close does not wait for the keep-alive timeout', async () => {
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inFlight = false;
    const server = createHttpServer((_req, res) => {
      inFlight = true;
      void gate.then(() => res.end('done'));
    });
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    const agent = new Agent({ keepAlive: true });
    const answer = new Promise<{ body: string; connection: string | undefined }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: address.port, path: '/', agent }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ body, connection: res.headers.connection }));
      });
      req.on('error', reject);
      req.end();
    });
    // The request must be in the handler, not merely connected: one that arrives once the close has
    // begun is answered with `connection: close`, as it should be.
    await waitFor('the request in flight', () => inFlight);
    const started = Date.now();
    const closing = closeServer(server);
    release();
    expect(await answer).toEqual({ body: 'done', connection: 'keep-alive' });
    await closing;
    expect(Date.now() - started).toBeLessThan(2000);
    agent.destroy();
  });
});

describe('cachedFor', () => {
  it('When scrapes come within the ttl, then one lookup serves them; a failed lookup is not kept', async () => {
    let calls = 0;
    let fail = false;
    const lookup = cachedFor(60_000, async () => {
      calls++;
      if (fail) throw new Error('down');
      return calls;
    });
    expect(await Promise.all([lookup(), lookup()])).toEqual([1, 1]);
    expect(calls).toBe(1);
    const short = cachedFor(0, async () => {
      calls++;
      if (fail) throw new Error('down');
      return calls;
    });
    fail = true;
    await expect(short()).rejects.toThrow('down');
    fail = false;
    expect(await short()).toBe(3);
  });
});

describe('TcpProxy', () => {
  it('When cut, then connections drop and new ones are refused; when black-holed, nothing is forwarded; when restored, it forwards again on the same port', async () => {
    const echo = createTcpServer((s) => s.pipe(s));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const address = echo.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: address.port });
    const roundTrip = (timeoutMs = 1000) =>
      new Promise<string>((resolve) => {
        const socket: Socket = connect(proxy.port, '127.0.0.1');
        const timer = setTimeout(() => {
          socket.destroy();
          resolve('timeout');
        }, timeoutMs);
        socket.on('connect', () => socket.write('ping'));
        socket.on('data', (d) => {
          clearTimeout(timer);
          socket.destroy();
          resolve(d.toString());
        });
        socket.on('error', (err: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          resolve(err.code ?? 'error');
        });
      });
    expect(await roundTrip()).toBe('ping');
    const held = connect(proxy.port, '127.0.0.1');
    await new Promise((resolve) => held.once('connect', resolve));
    const closed = new Promise((resolve) => held.once('close', resolve));
    await proxy.cut();
    await closed; // the open connection was dropped
    expect(await roundTrip()).toBe('ECONNREFUSED');
    await proxy.blackhole();
    expect(await roundTrip(300)).toBe('timeout');
    await proxy.restore();
    expect(await roundTrip()).toBe('ping');
    await proxy.close();
    await new Promise<void>((resolve) => echo.close(() => resolve()));
  });
});

describe('metricValue', () => {
  it('When series match the labels, then their values are summed; when none match, then undefined', () => {
    const text = [
      '# HELP x_total x',
      'x_total{reason="a",service="s"} 2',
      'x_total{reason="b",service="s"} 3',
      'y 1.5',
    ].join('\n');
    expect(metricValue(text, 'x_total')).toBe(5);
    expect(metricValue(text, 'x_total', { reason: 'b' })).toBe(3);
    expect(metricValue(text, 'y')).toBe(1.5);
    expect(metricValue(text, 'x_total', { reason: 'c' })).toBeUndefined();
  });
});
