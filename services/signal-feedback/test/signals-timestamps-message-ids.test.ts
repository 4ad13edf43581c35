import request from 'supertest';
import { mcpClientPool } from '@repo/service-kit/testing';
import { signalQuotaError } from '../src/domain/signals-quota';
import {
  createContext,
  createProduct,
  signUp,
  startHarness,
  type Harness,
  type SignedIn,
} from './support/harness';

// Two replicas of the service on one database, as production runs them behind a load balancer.
let h: Harness;
let replica: Harness;
const clients = mcpClientPool(() => h.baseUrl);

beforeAll(async () => {
  h = await startHarness('signal_feedback_signal_ids_test');
  replica = await startHarness('unused', { reuseDatabaseUrl: h.databaseUrl });
});
afterAll(async () => {
  await clients.closeAll();
  await replica?.close();
  await h?.close();
});

async function setup(): Promise<{ user: SignedIn; product: { id: string; apiKey: string } }> {
  const user = await signUp(h);
  const product = await createProduct(user);
  return { user, product };
}

const send = (baseUrl: string, apiKey: string, body: unknown) =>
  request(baseUrl)
    .post('/api/signals')
    .set('x-api-key', apiKey)
    .send(body as object);

interface Row {
  type: string;
  message_id: string | null;
  created_at: Date;
  received_at: Date | null;
}
const signalRows = (productId: string) =>
  h.db.$queryRawUnsafe<Row[]>(
    'SELECT type, message_id, created_at, received_at FROM signals WHERE product_id = $1::uuid ORDER BY id',
    productId,
  );

const usedThisMonth = async (userId: string): Promise<number> =>
  (
    await h.db.$queryRawUnsafe<{ signals: number }[]>(
      `SELECT signals FROM usage_counters WHERE user_id = $1::uuid
          AND month = date_trunc('month', now() AT TIME ZONE 'utc')::date`,
      userId,
    )
  )[0]?.signals ?? 0;

const setUsage = (userId: string, signals: number) =>
  h.db.$executeRawUnsafe(
    `INSERT INTO usage_counters (user_id, month, signals, proposals)
     VALUES ($1::uuid, date_trunc('month', now() AT TIME ZONE 'utc')::date, $2, 0)
     ON CONFLICT (user_id, month) DO UPDATE SET signals = EXCLUDED.signals`,
    userId,
    signals,
  );

const HOUR = 3_600_000;

describe('Signal timestamps', () => {
  test('When signals carry timestamps within the skew, then each is stored as the signal time and the receipt time is kept beside it', async () => {
    const { product } = await setup();
    const twoDaysAgo = new Date(Date.now() - 48 * HOUR);
    const soon = new Date(Date.now() + 5 * 60_000);
    const before = Date.now();
    const res = await send(h.baseUrl, product.apiKey, [
      { type: 'old', timestamp: twoDaysAgo.toISOString() },
      // An offset other than Z names the same instant.
      { type: 'offset', timestamp: `${isoHourIn(twoDaysAgo, 2)}:00:00+02:00` },
      { type: 'ahead', timestamp: soon.toISOString() },
      { type: 'none' },
    ]);
    const after = Date.now();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: 4 });
    const rows = await signalRows(product.id);
    expect(rows.map((r) => r.type)).toEqual(['old', 'offset', 'ahead', 'none']);
    expect(rows[0]!.created_at.getTime()).toBe(twoDaysAgo.getTime());
    expect(rows[1]!.created_at.getTime()).toBe(Date.parse(`${isoHourIn(twoDaysAgo, 0)}:00:00Z`));
    expect(rows[2]!.created_at.getTime()).toBe(soon.getTime());
    for (const r of rows) {
      expect(r.received_at!.getTime()).toBeGreaterThanOrEqual(before - 5);
      expect(r.received_at!.getTime()).toBeLessThanOrEqual(after + 5);
    }
    expect(rows[3]!.created_at.getTime()).toBe(rows[3]!.received_at!.getTime());
  });

  test('When a timestamp is more than 7 days old, more than 10 minutes ahead, or has no offset, then 400 names the field and nothing is stored', async () => {
    const { user, product } = await setup();
    const tooOld = new Date(Date.now() - 7 * 24 * HOUR - 60_000).toISOString();
    const tooNew = new Date(Date.now() + 11 * 60_000).toISOString();
    const old = await send(h.baseUrl, product.apiKey, [
      { type: 'fine' },
      { type: 'late', timestamp: tooOld },
      { type: 'early', timestamp: tooNew },
    ]);
    expect(old.status).toBe(400);
    expect(old.body).toMatchObject({ code: 'invalid_request', requestId: expect.any(String) });
    expect(old.body.error).toContain('`1.timestamp` is more than 7 days before the time of receipt');
    expect(old.body.details.issues).toEqual([
      expect.objectContaining({ path: 'body.1.timestamp', code: 'too_small' }),
      expect.objectContaining({ path: 'body.2.timestamp', code: 'too_big' }),
    ]);
    for (const timestamp of ['2026-11-28T10:00:00', 'yesterday', '', 1732780800]) {
      const bad = await send(h.baseUrl, product.apiKey, { type: 'x', timestamp });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body.details)).toContain('timestamp');
    }
    // The same bounds on /api/ingest and in the MCP tool.
    const ingest = await request(h.baseUrl)
      .post(`/api/ingest?key=${product.apiKey}`)
      .send({ event: 'late', timestamp: tooOld });
    expect(ingest.status).toBe(400);
    expect(JSON.stringify(ingest.body.details)).toContain('body.0.timestamp');
    const agent = await clients.connect({ 'x-api-key': product.apiKey });
    const tool = await agent.callTool({
      name: 'send_signals',
      arguments: { signals: [{ type: 'late', timestamp: tooOld }] },
    });
    expect(tool.isError).toBe(true);
    expect(JSON.stringify(tool.content)).toContain('arguments.signals.0.timestamp');
    expect(await signalRows(product.id)).toHaveLength(0);
    expect(await usedThisMonth(user.userId)).toBe(0);
  });

  test('When a backdated signal reaches a context, then the series counts it in the hour of its timestamp', async () => {
    const { user, product } = await setup();
    const ctx = await createContext(user, product.id);
    const at = new Date(Math.floor((Date.now() - 30 * HOUR) / HOUR) * HOUR + 17 * 60_000);
    await send(h.baseUrl, product.apiKey, [
      { type: 'payment_failed', timestamp: at.toISOString() },
      { type: 'checkout_completed' },
    ]).expect(200);
    const series = await request(h.baseUrl)
      .get(`/api/context/${ctx.id}/series`)
      .query({
        from: new Date(Date.now() - 48 * HOUR).toISOString(),
        to: new Date(Date.now() + HOUR).toISOString(),
      })
      .set('x-api-key', product.apiKey)
      .expect(200);
    const buckets = series.body as { start: string; signals: number; negative: number }[];
    // The signal without a timestamp counts at its time of receipt.
    const receivedAt = (await signalRows(product.id))[1]!.received_at!;
    const hourOf = (d: Date) => new Date(Math.floor(d.getTime() / HOUR) * HOUR).toISOString();
    const nonEmpty = buckets.filter((b) => b.signals > 0);
    expect(nonEmpty).toEqual([
      expect.objectContaining({ start: hourOf(at), signals: 1, negative: 1 }),
      expect.objectContaining({ start: hourOf(receivedAt), signals: 1, negative: 0 }),
    ]);
  });
});

describe('Signal messageId', () => {
  test('When two clients send the same batches concurrently to two replicas, then each messageId is stored once and counted once', async () => {
    const { user, product } = await setup();
    const rounds = 3;
    const size = 40;
    for (let round = 0; round < rounds; round++) {
      const batch = Array.from({ length: size }, (_, i) => ({
        type: `t${i % 4}`,
        messageId: `r${round}-m${i}`,
        payload: { i },
      }));
      // Two clients, each sending the batch twice (a retry after a timeout), half to each replica.
      const answers = await Promise.all(
        [h, replica, h, replica].map((target) =>
          fetch(`${target.baseUrl}/api/signals`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': product.apiKey },
            body: JSON.stringify(batch),
          }).then(async (r) => ({
            status: r.status,
            body: (await r.json()) as { received: number; duplicates?: number },
          })),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      for (const a of answers) expect(a.body.received + (a.body.duplicates ?? 0)).toBe(size);
      expect(answers.reduce((n, a) => n + a.body.received, 0)).toBe(size);
      expect(answers.reduce((n, a) => n + (a.body.duplicates ?? 0), 0)).toBe(3 * size);
    }
    const perId = await h.db.$queryRawUnsafe<{ message_id: string; n: number }[]>(
      `SELECT message_id, count(*)::int AS n FROM signals WHERE product_id = $1::uuid GROUP BY 1`,
      product.id,
    );
    expect(perId).toHaveLength(rounds * size);
    expect(perId.every((r) => r.n === 1)).toBe(true);
    expect(await usedThisMonth(user.userId)).toBe(rounds * size);
    const me = await user.agent.get('/api/auth/me').expect(200);
    expect(me.body.usage.signals).toBe(rounds * size);
  }, 60_000);

  test('When a batch is retried, repeats an id inside itself or mixes old and new ids, then only the new signals are stored and counted', async () => {
    const { user, product } = await setup();
    const first = [
      { type: 'a', messageId: 'id-1' },
      { type: 'b', messageId: 'id-2' },
      { type: 'b-again', messageId: 'id-2' },
      { type: 'no-id' },
    ];
    expect((await send(h.baseUrl, product.apiKey, first).expect(200)).body).toEqual({
      received: 3,
      duplicates: 1,
    });
    expect((await send(replica.baseUrl, product.apiKey, first).expect(200)).body).toEqual({
      received: 1,
      duplicates: 3,
    });
    const mixed = [
      { type: 'a', messageId: 'id-1' },
      { type: 'c', messageId: 'id-3' },
    ];
    expect((await send(h.baseUrl, product.apiKey, mixed).expect(200)).body).toEqual({
      received: 1,
      duplicates: 1,
    });
    // /api/ingest and one object rather than an array honour the same ids.
    expect(
      (
        await request(h.baseUrl)
          .post(`/api/ingest?key=${product.apiKey}`)
          .send({ event: 'c', messageId: 'id-3' })
          .expect(200)
      ).body,
    ).toEqual({ received: 0, duplicates: 1 });
    expect((await signalRows(product.id)).map((r) => [r.type, r.message_id])).toEqual([
      ['a', 'id-1'],
      ['b', 'id-2'],
      ['no-id', null],
      ['no-id', null],
      ['c', 'id-3'],
    ]);
    expect(await usedThisMonth(user.userId)).toBe(5);
  });

  test('When another product sends the same messageId, then it is its own signal', async () => {
    const a = await setup();
    const b = await setup();
    await send(h.baseUrl, a.product.apiKey, { type: 'x', messageId: 'shared' }).expect(200);
    expect(
      (await send(h.baseUrl, b.product.apiKey, { type: 'x', messageId: 'shared' }).expect(200)).body,
    ).toEqual({
      received: 1,
    });
  });

  test('When the quota is used up, then a retried batch is still acknowledged, and a refused batch leaves its ids free', async () => {
    const { user, product } = await setup();
    await send(h.baseUrl, product.apiKey, [{ type: 'x', messageId: 'kept' }]).expect(200);
    await setUsage(user.userId, 500);
    expect(
      (await send(h.baseUrl, product.apiKey, [{ type: 'x', messageId: 'kept' }]).expect(200)).body,
    ).toEqual({
      received: 0,
      duplicates: 1,
    });
    const refused = await send(h.baseUrl, product.apiKey, [
      { type: 'x', messageId: 'kept' },
      { type: 'y', messageId: 'refused' },
    ]);
    expect(refused.status).toBe(429);
    expect(refused.body.details).toMatchObject({ used: 500, requested: 1, duplicates: 1, remaining: 0 });
    await h.db.user.update({ where: { id: user.userId }, data: { plan: 'builder' } });
    await setUsage(user.userId, 500);
    // A replica's key cache may still hold the free plan: ask the one that saw no request since.
    const accepted = await send(replica.baseUrl, product.apiKey, [
      { type: 'x', messageId: 'kept' },
      { type: 'y', messageId: 'refused' },
    ]);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ received: 1, duplicates: 1 });
    expect((await signalRows(product.id)).map((r) => r.message_id)).toEqual(['kept', 'refused']);
    expect(await usedThisMonth(user.userId)).toBe(501);
  });

  test('When an id is older than 24 hours, then it is accepted again, and the hourly sweep deletes expired ids only', async () => {
    const { product } = await setup();
    await send(h.baseUrl, product.apiKey, [
      { type: 'x', messageId: 'old' },
      { type: 'x', messageId: 'fresh' },
    ]).expect(200);
    await h.db.$executeRawUnsafe(
      `UPDATE signal_message_ids SET received_at = now() - interval '25 hours'
        WHERE product_id = $1::uuid AND message_id = 'old'`,
      product.id,
    );
    expect(
      (await send(h.baseUrl, product.apiKey, [{ type: 'x', messageId: 'old' }]).expect(200)).body,
    ).toEqual({
      received: 1,
    });
    await h.db.$executeRawUnsafe(
      `UPDATE signal_message_ids SET received_at = now() - interval '25 hours'
        WHERE product_id = $1::uuid AND message_id = 'old'`,
      product.id,
    );
    await h.service.expirySweep.kick();
    const left = await h.db.$queryRawUnsafe<{ message_id: string }[]>(
      'SELECT message_id FROM signal_message_ids WHERE product_id = $1::uuid ORDER BY 1',
      product.id,
    );
    expect(left.map((r) => r.message_id)).toEqual(['fresh']);
    expect((await signalRows(product.id)).map((r) => r.message_id)).toEqual(['old', 'fresh', 'old']);
  });

  test('When an MCP agent retries send_signals with the same messageIds, then the retry reports them as duplicates', async () => {
    const { product } = await setup();
    const agent = await clients.connect({ 'x-api-key': product.apiKey });
    const args = {
      signals: [
        { type: 'a', messageId: 'mcp-1' },
        { type: 'b', messageId: 'mcp-2' },
      ],
    };
    const first = await agent.callTool({ name: 'send_signals', arguments: args });
    expect(first.structuredContent).toEqual({ received: 2 });
    const retry = await agent.callTool({ name: 'send_signals', arguments: args });
    expect(retry.structuredContent).toEqual({ received: 0, duplicates: 2 });
    expect(await signalRows(product.id)).toHaveLength(2);
  });

  test('When a messageId is empty, longer than 100 characters or not a string, then 400 names it', async () => {
    const { product } = await setup();
    for (const messageId of ['', 'm'.repeat(101), 42]) {
      const res = await send(h.baseUrl, product.apiKey, [{ type: 'x' }, { type: 'x', messageId }]);
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body.details)).toContain('body.1.messageId');
    }
    expect(await signalRows(product.id)).toHaveLength(0);
  });
});

describe('Signal quota messages', () => {
  test('When a 600-signal batch reaches the free plan with 3 used, then 429 says to split it into at most 497 and sends no Retry-After', async () => {
    const { user, product } = await setup();
    await setUsage(user.userId, 3);
    const batch = Array.from({ length: 600 }, (_, i) => ({ type: `t${i}` }));
    const res = await send(h.baseUrl, product.apiKey, batch);
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.body.code).toBe('quota_exceeded');
    expect(res.body.error).toContain('split it into batches of at most 497');
    expect(res.body.error).toContain('upgrade to the builder plan');
    expect(res.body.details).toMatchObject({
      plan: 'free',
      limit: 500,
      used: 3,
      remaining: 497,
      requested: 600,
      upgrade_to: { plan: 'builder', signals_per_month: 5000 },
    });
    expect(await signalRows(product.id)).toHaveLength(0);
    // Following the advice works.
    await send(h.baseUrl, product.apiKey, batch.slice(0, 497)).expect(200);
  });

  test('When a batch fits the plan but not what is left, then 429 says how many to send now and Retry-After gives the reset', async () => {
    const { user, product } = await setup();
    await setUsage(user.userId, 497);
    const res = await send(
      h.baseUrl,
      product.apiKey,
      Array.from({ length: 10 }, () => ({ type: 'x' })),
    );
    expect(res.status).toBe(429);
    expect(res.body.error).toContain('send at most 3 now');
    expect(res.body.details).toMatchObject({ remaining: 3, requested: 10 });
    const retryAfter = Number(res.headers['retry-after']);
    const resetsAt = Date.parse(res.body.details.resets_at as string);
    expect(Math.abs(Date.now() + retryAfter * 1000 - resetsAt)).toBeLessThan(5_000);
    await setUsage(user.userId, 500);
    const usedUp = await send(h.baseUrl, product.apiKey, { type: 'x' });
    expect(usedUp.status).toBe(429);
    expect(usedUp.body.error).toContain('used up');
    expect(Number(usedUp.headers['retry-after'])).toBeGreaterThan(0);
  });

  test('When the largest plan is reached, then the message offers no upgrade', () => {
    const err = signalQuotaError(
      { plan: 'scale', used: 499_990, requested: 20, duplicates: 0 },
      new Date('2026-11-28T12:00:00Z'),
    );
    expect(err.status).toBe(429);
    expect(err.message).toContain('the scale plan is the largest');
    expect(err.details).toMatchObject({
      remaining: 10,
      upgrade_to: null,
      resets_at: '2026-12-01T00:00:00.000Z',
    });
    expect(err.headers['Retry-After']).toBe(String(2.5 * 24 * 3600));
    const huge = signalQuotaError(
      { plan: 'builder', used: 5_000, requested: 6_000, duplicates: 0 },
      new Date('2026-11-28T12:00:00Z'),
    );
    expect(huge.message).toContain(
      'split it into batches of at most 5,000 signal(s) and send them after the limit resets',
    );
    expect(huge.details).toMatchObject({ upgrade_to: { plan: 'growth' } });
    expect(huge.headers['Retry-After']).toBeUndefined();
  });
});

/** `YYYY-MM-DDTHH` of `d` shifted by `hours` (for writing an instant with a +HH:00 offset). */
function isoHourIn(d: Date, hours: number): string {
  return new Date(Math.floor(d.getTime() / HOUR) * HOUR + hours * HOUR).toISOString().slice(0, 13);
}
