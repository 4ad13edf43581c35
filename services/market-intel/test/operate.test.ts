import { encodePaymentHeader } from '@repo/x402-core';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import {
  judgeShutdown,
  metricValue,
  readinessWhileHung,
  readyStatus,
  scrape,
  startLoad,
  waitFor,
} from '@repo/service-kit/testing';
import { spawnProxiedMarketIntel, unknownSignature, type ProxiedMarketIntel } from './support/process';

// One real market-intel process (src/main.ts) whose PostgreSQL and RabbitMQ go through cuttable proxies.
jest.setTimeout(90_000);

let mi: ProxiedMarketIntel;
beforeAll(async () => {
  mi = await spawnProxiedMarketIntel('market_intel_operate_test', {
    SHUTDOWN_TIMEOUT_MS: '15000',
    SHUTDOWN_DRAIN_DELAY_MS: '300',
  });
  await waitFor('ready', async () => (await readyStatus(mi.service.baseUrl)) === 200, 30_000);
});
afterAll(async () => mi?.close());

const GAPS = '/api/v1/scout/gaps?sector=fintech';
const proof = (signature: string) => ({ 'X-PAYMENT': encodePaymentHeader('solana', signature) });

describe('/metrics', () => {
  it('When /metrics is asked on the public port, then 404 in the envelope; the metrics port serves it', async () => {
    const onPublic = await fetch(`${mi.service.baseUrl}/metrics`);
    expect(onPublic.status).toBe(404);
    expect(await onPublic.json()).toMatchObject({ code: 'not_found', requestId: expect.any(String) });
    const onMetrics = await fetch(`${mi.service.metricsUrl}/metrics`);
    expect(onMetrics.status).toBe(200);
    expect(onMetrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await onMetrics.text()).toContain('http_request_duration_seconds');
    expect((await fetch(`${mi.service.metricsUrl}/api/v1/sectors`)).status).toBe(404);
  });

  it('When payments are challenged and refused, then x402_payments_total counts them by reason, and jobs by state, queue depths and HTTP latency are exposed', async () => {
    const base = mi.service.baseUrl;
    expect((await fetch(base + GAPS)).status).toBe(402);
    expect((await fetch(base + GAPS, { headers: { 'X-PAYMENT': 'not base64 json' } })).status).toBe(402);
    const unknown = await fetch(base + GAPS, { headers: proof(unknownSignature()) });
    expect(unknown.status).toBe(402);
    expect(((await unknown.json()) as { details?: { reason?: string } }).details?.reason).toBe('not_found');

    const text = await scrape(mi.service.metricsUrl);
    const endpoint = 'GET /api/v1/scout/gaps';
    expect(metricValue(text, 'x402_payments_total', { type: 'challenged', endpoint })).toBe(1);
    expect(
      metricValue(text, 'x402_payments_total', {
        type: 'rejected',
        reason: 'invalid_payment_header',
        endpoint,
      }),
    ).toBe(1);
    expect(
      metricValue(text, 'x402_payments_total', { type: 'rejected', reason: 'not_found', endpoint }),
    ).toBe(1);
    expect(metricValue(text, 'x402_verification_rpc_seconds_count', { network: 'solana' })).toBe(1);
    // Every reason label is one of the bounded set.
    const reasons = new Set(
      text
        .split('\n')
        .filter((l) => l.startsWith('x402_payments_total{'))
        .map((l) => /reason="([^"]*)"/.exec(l)?.[1]),
    );
    for (const reason of reasons) expect(['', 'invalid_payment_header', 'not_found']).toContain(reason);

    expect(
      metricValue(text, 'http_request_duration_seconds_count', {
        route: '/api/v1/scout/gaps',
        status: '402',
      }),
    ).toBe(3);
    // A malformed payment header is a 402 like any unacceptable payment, not a 400.
    expect(
      metricValue(text, 'http_request_duration_seconds_count', {
        route: '/api/v1/scout/gaps',
        status: '400',
      }),
    ).toBeUndefined();
    for (const status of ['pending', 'running', 'completed', 'failed'])
      expect(metricValue(text, 'compute_jobs', { status })).toBe(0);
    expect(metricValue(text, 'compute_outbox_pending')).toBe(0);
    for (const queue of [
      COMPUTE_TOPOLOGY.queues.starts,
      COMPUTE_TOPOLOGY.queues.steps,
      COMPUTE_TOPOLOGY.queues.deadLetter,
    ])
      expect(metricValue(text, 'rabbitmq_queue_messages', { queue })).toBe(0);
  });
});

describe('/readyz on dependency loss', () => {
  it('When PostgreSQL becomes unreachable, then /readyz answers 503, and 200 again once it is back', async () => {
    const base = mi.service.baseUrl;
    await mi.pg.cut();
    await waitFor('503 without PostgreSQL', async () => (await readyStatus(base)) === 503, 10_000);
    expect((await fetch(base + '/livez')).status).toBe(200);
    await mi.pg.restore();
    await waitFor('200 with PostgreSQL back', async () => (await readyStatus(base)) === 200, 15_000);
    // The pool made new connections: a database-backed endpoint works again.
    expect((await fetch(base + '/api/v1/sectors')).status).toBe(200);
  });

  it('When PostgreSQL hangs (connections accepted, never answered), then /readyz answers 503 within its 2 s timeout', async () => {
    expect(await readinessWhileHung(mi.service.baseUrl, mi.pg)).toBeLessThan(5000);
  });

  it('When RabbitMQ becomes unreachable, then /readyz answers 503, and 200 again once the broker client reconnected', async () => {
    const base = mi.service.baseUrl;
    await mi.amqp.cut();
    await waitFor('503 without RabbitMQ', async () => (await readyStatus(base)) === 503, 10_000);
    await mi.amqp.restore();
    await waitFor('200 with RabbitMQ back', async () => (await readyStatus(base)) === 200, 20_000);
    // The consumers and the publish channel are back: queue depths are read again.
    await waitFor(
      'queue depth after reconnect',
      async () =>
        metricValue(await scrape(mi.service.metricsUrl), 'rabbitmq_queue_messages', {
          queue: COMPUTE_TOPOLOGY.queues.steps,
        }) === 0,
    );
  });
});

describe('Graceful shutdown', () => {
  // A process of its own (own database and vhost), so the other tests keep theirs whatever the order.
  let victim: ProxiedMarketIntel;
  beforeAll(async () => {
    victim = await spawnProxiedMarketIntel('market_intel_operate_shutdown_test', {
      SHUTDOWN_TIMEOUT_MS: '15000',
      SHUTDOWN_DRAIN_DELAY_MS: '300',
    });
    await waitFor('ready', async () => (await readyStatus(victim.service.baseUrl)) === 200, 30_000);
  });
  afterAll(async () => victim?.close());

  it('When SIGTERM arrives under load, then readiness fails first, every request sent while ready gets a complete answer, refusals come only after readiness failed, and the process exits 0 in its grace period', async () => {
    const mi = victim;
    const base = mi.service.baseUrl;
    // Fast free requests, plus slow paid ones (about 1 s of RPC retries each) that are surely in flight at the signal.
    const fast = startLoad(base, 6, () => ({ method: 'GET', path: '/api/v1/sectors' }));
    const slow = startLoad(base, 3, () => ({
      method: 'GET',
      path: GAPS,
      headers: proof(unknownSignature()),
    }));
    await waitFor(
      'load running',
      () => fast.results.filter((r) => r.status === 200).length >= 50 && slow.results.length >= 3,
    );
    const signalAt = Date.now();
    mi.service.kill('SIGTERM');
    const exit = await mi.service.exited;
    const exitedAfterMs = Date.now() - signalAt;
    const results = [...(await fast.stop()), ...(await slow.stop())];
    const unreadyAt = fast.unreadyAt();
    const verdict = judgeShutdown(results, signalAt, unreadyAt);
    // Readiness failed after the signal and before the port closed (the drain delay).
    expect(unreadyAt).toBeGreaterThanOrEqual(signalAt);
    expect(fast.unreadyHow()).toBe(503);

    if (exit.code !== 0) console.error(mi.service.output().split('\n').slice(-40).join('\n'));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitedAfterMs).toBeLessThan(15_000);
    expect(
      verdict.failures.map((f) => ({
        ...f,
        startedAt: f.startedAt - signalAt,
        endedAt: f.endedAt - signalAt,
        body: undefined,
      })),
    ).toEqual([]);
    const slowInFlight = (await slow.stop()).filter((r) => r.startedAt < signalAt && r.endedAt >= signalAt);
    expect(slowInFlight.length).toBeGreaterThan(0);
    for (const r of slowInFlight) expect(r.status).toBe(402);
    expect(verdict.inFlightCompleted).toBeGreaterThan(0);
    // A summary for the report when run with --verbose.
    console.info(
      `market-intel shutdown: ${results.length} requests, ${verdict.completed} complete (${verdict.inFlightCompleted} in flight at SIGTERM, ${slowInFlight.length} slow), ${verdict.refusedAfterUnready} refused after readiness failed, exit after ${exitedAfterMs} ms`,
    );
  });
});
