import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import request from 'supertest';
import { runAdmin } from '../src/entry-points/cli/admin';
import { createContext, createProduct, signUp, startHarness, type Harness } from './support/harness';

let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await startHarness('signal_feedback_admin_import_test');
  dir = await mkdtemp(join(tmpdir(), 'admin-import-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await h?.close();
});

const DAY_MS = 24 * 3_600_000;
const WEEK_MS = 7 * DAY_MS;
let files = 0;

/** Runs `admin import-signals <productId> <file of lines>`; returns the exit code and the output. */
async function importLines(
  productId: string,
  lines: readonly string[],
): Promise<{ code: number; out: string }> {
  const file = join(dir, `import-${++files}.ndjson`);
  await writeFile(file, lines.join('\n') + '\n');
  const out: string[] = [];
  const code = await runAdmin(
    ['import-signals', productId, file],
    { DATABASE_URL: h.databaseUrl, LOG_LEVEL: 'silent' },
    (l) => out.push(l),
  );
  return { code, out: out.join('\n') };
}

/** `total` signals of a context spread evenly over `[from, from + span)`, `failing` of them payment_failed. */
function spread(
  prefix: string,
  contextId: string,
  from: number,
  span: number,
  total: number,
  failing: number,
) {
  return Array.from({ length: total }, (_, i) =>
    JSON.stringify({
      type: i % Math.round(total / failing) === 0 ? 'payment_failed' : 'checkout_completed',
      context_id: contextId,
      payload: { n: i },
      timestamp: new Date(from + Math.floor((i * span) / total)).toISOString(),
      messageId: `${prefix}-${i}`,
    }),
  );
}

async function productWithContexts() {
  const user = await signUp(h);
  const product = await createProduct(user);
  const checkout = await createContext(user, product.id);
  const express = await createContext(user, product.id, { name: 'Express checkout' });
  return { user, product, checkout, express };
}

const usage = (userId: string) => h.db.usageCounter.findMany({ where: { userId } });

describe('admin import-signals', () => {
  test('When dated history 20 days back is imported, then it lands with its timestamps, classed and routed, outside the quota, and a re-import inserts nothing', async () => {
    const p = await productWithContexts();
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', p.product.apiKey)
      .send({ type: 'live', context_id: p.checkout.id })
      .expect(200);
    const usageBefore = await usage(p.user.userId);
    const start = Date.now() - 20 * DAY_MS;
    const lines = [
      ...spread('c', p.checkout.id, start, DAY_MS, 30, 10),
      ...spread('e', p.express.id, start, DAY_MS, 12, 3),
      // A line without a messageId, and the same signal twice in the file: stored once.
      JSON.stringify({ type: 'note', context_id: p.express.id, timestamp: new Date(start).toISOString() }),
    ];
    const first = await importLines(p.product.id, [...lines, lines[0]!]);
    expect(first).toEqual({
      code: 0,
      out: expect.stringContaining(
        '44 signal(s) for product ' + p.product.id + ': 43 inserted, 1 already present',
      ),
    });
    expect(first.out).toContain(`context ${p.checkout.id}: 30 inserted, 1 already present`);
    expect(first.out).toContain(`context ${p.express.id}: 13 inserted, 0 already present`);
    const rows = await h.db.signal.findMany({
      where: { productId: p.product.id, messageId: { startsWith: 'c-' } },
      orderBy: { createdAt: 'asc' },
    });
    expect(rows).toHaveLength(30);
    expect(rows[0]).toMatchObject({
      contextId: p.checkout.id,
      type: 'payment_failed',
      sentiment: 'negative',
      payload: { n: 0 },
      messageId: 'c-0',
      createdAt: new Date(new Date(start).toISOString()),
    });
    expect(rows[1]).toMatchObject({ type: 'checkout_completed', sentiment: 'positive' });
    // History is not this month's traffic: the usage counters do not move.
    expect(await usage(p.user.userId)).toEqual(usageBefore);

    // Re-import: the signals with a messageId are already present; the one without is stored again.
    const again = await importLines(p.product.id, lines.slice(0, 42));
    expect(again).toEqual({ code: 0, out: expect.stringContaining('0 inserted, 42 already present') });
    expect(await h.db.signal.count({ where: { productId: p.product.id } })).toBe(1 + 43);
    expect(await usage(p.user.userId)).toEqual(usageBefore);
  });

  test('When stdin is imported with -, then it is read like a file', async () => {
    const p = await productWithContexts();
    const out: string[] = [];
    const lines = spread('s', p.checkout.id, Date.now() - 3 * DAY_MS, DAY_MS, 5, 1).join('\n');
    const code = await runAdmin(
      ['import-signals', p.product.id, '-'],
      { DATABASE_URL: h.databaseUrl, LOG_LEVEL: 'silent' },
      (l) => out.push(l),
      Readable.from([Buffer.from(lines.slice(0, 10)), Buffer.from(lines.slice(10))]),
    );
    expect(code).toBe(0);
    expect(out.join('\n')).toContain('5 inserted, 0 already present');
    expect(await h.db.signal.count({ where: { productId: p.product.id } })).toBe(5);
  });

  test('When a line is bad (a field error, a future or too old timestamp, a foreign context, not JSON, too long), then its number is printed and nothing is imported', async () => {
    const p = await productWithContexts();
    const other = await productWithContexts();
    const good = spread('g', p.checkout.id, Date.now() - 2 * DAY_MS, DAY_MS, 3, 1);
    const at = (ms: number) => new Date(ms).toISOString();
    const r = await importLines(p.product.id, [
      good[0]!,
      JSON.stringify({ type: '', timestamp: at(Date.now() - DAY_MS) }),
      good[1]!,
      JSON.stringify({ type: 'x', timestamp: at(Date.now() + 60_000) }),
      JSON.stringify({ type: 'x', timestamp: at(Date.now() - 401 * DAY_MS) }),
      JSON.stringify({ type: 'x', context_id: other.checkout.id, timestamp: at(Date.now() - DAY_MS) }),
      JSON.stringify({ type: 'x' }),
      '{"type": "x",',
      JSON.stringify({ type: 'x', timestamp: at(Date.now() - DAY_MS), sentAt: 1 }),
      JSON.stringify({ type: 'x', timestamp: at(Date.now() - DAY_MS), payload: { pad: 'y'.repeat(70_000) } }),
      good[2]!,
    ]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^line 2: type: .*\(too_small\)$/m);
    expect(r.out).toMatch(/^line 4: timestamp: is in the future .*\(too_big\)$/m);
    expect(r.out).toMatch(/^line 5: timestamp: is more than 400 days old \(too_small\)$/m);
    expect(r.out).toMatch(/^line 6: context_id: is not a context of this product \(invalid_value\)$/m);
    expect(r.out).toMatch(/^line 7: timestamp: is required: imported history is dated \(required\)$/m);
    expect(r.out).toMatch(/^line 8: is not valid JSON$/m);
    expect(r.out).toMatch(/^line 9: sentAt: is not a known field \(unknown_field\)$/m);
    expect(r.out).toMatch(/^line 10: is longer than 65536 bytes$/m);
    expect(r.out).toContain('8 bad line(s) in 11 line(s): nothing imported');
    expect(r.out).not.toMatch(/^line (1|3|11):/m);
    expect(await h.db.signal.count({ where: { productId: p.product.id } })).toBe(0);
  });

  test('When the product does not exist, then the command exits 1 saying so; without a file it prints the usage and exits 2', async () => {
    const line = spread('u', randomUUID(), Date.now() - DAY_MS, DAY_MS, 1, 1);
    const unknown = randomUUID();
    expect(await importLines(unknown, line)).toEqual({ code: 1, out: `no product with id ${unknown}` });
    expect(await importLines('not-a-product', line)).toEqual({
      code: 1,
      out: 'no product with id not-a-product',
    });
    const p = await productWithContexts();
    expect(await importLines(p.product.id, [])).toMatchObject({
      code: 0,
      out: expect.stringContaining('0 inserted'),
    });
    const missing = await runAdmin(
      ['import-signals', p.product.id, join(dir, 'absent.ndjson')],
      { DATABASE_URL: h.databaseUrl, LOG_LEVEL: 'silent' },
      () => undefined,
    );
    expect(missing).toBe(1);
    const out: string[] = [];
    expect(await runAdmin(['import-signals', p.product.id], {}, (l) => out.push(l))).toBe(2);
    expect(out.join('\n')).toContain('admin import-signals <product-id> <file|->');
  });

  test('When three weeks of history are imported, then a deployment verified over them has its placebo computed', async () => {
    const p = await productWithContexts();
    await request(h.baseUrl)
      .post('/api/signals')
      .set('x-api-key', p.product.apiKey)
      .send([
        ...Array.from({ length: 6 }, () => ({ type: 'payment_failed', context_id: p.checkout.id })),
        ...Array.from({ length: 4 }, () => ({ type: 'checkout_completed', context_id: p.checkout.id })),
      ])
      .expect(200);
    const run = await p.user.agent.post('/api/analysis/run').set('x-csrf-token', p.user.csrf).expect(200);
    const proposalId = run.body.proposals[0].id as string;
    await request(h.baseUrl)
      .patch(`/api/proposals/${proposalId}`)
      .set('x-api-key', p.product.apiKey)
      .send({ status: 'approved' })
      .expect(200);
    const res = await request(h.baseUrl)
      .post(`/api/proposals/${proposalId}/deployments`)
      .set('x-api-key', p.product.apiKey)
      .send({ version: 'v3', window_minutes: 1440, control_contexts: [p.express.id] })
      .expect(201);
    // As if two days had passed: the after-window closed yesterday, the placebo's starts 16 days back.
    const at = Date.now() - 2 * DAY_MS;
    const lines: string[] = [];
    for (const [name, from, failing] of [
      ['placebo', at - 2 * WEEK_MS, 40],
      ['before', at - WEEK_MS, 40],
      ['after', at, 10],
    ] as const) {
      lines.push(...spread(`${name}-c`, p.checkout.id, from, DAY_MS, 200, failing));
      lines.push(...spread(`${name}-e`, p.express.id, from, DAY_MS, 200, 40));
    }
    expect(await importLines(p.product.id, lines)).toMatchObject({
      code: 0,
      out: expect.stringContaining('1200 inserted'),
    });
    await h.db.deployment.update({ where: { id: res.body.id }, data: { deployedAt: new Date(at) } });
    const list = await request(h.baseUrl)
      .get(`/api/proposals/${proposalId}/deployments`)
      .set('x-api-key', p.product.apiKey)
      .expect(200);
    const v = list.body[0].verification;
    expect(v).toMatchObject({ provisional: false, method: { estimator: 'did' } });
    expect(v.placebo).toMatchObject({ estimate: expect.any(Number), significant: false });
    expect(v.verdict).toBe('improved');
  });
});
