import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRateLimit } from '@repo/service-kit';
import {
  PrismaPaymentLedger,
  VerificationAttemptLimit,
  X402_VERIFICATION_ATTEMPT_PRISMA_MODEL,
  type AttemptCounter,
  type PaymentClaim,
} from '../src/index';
import {
  PgSqlClient,
  TEST_DATABASE_URL,
  buildClaimRequest,
  buildStoredResponse,
  buildVerifiedPayment,
} from '@repo/x402-ledger/testing';
import { claimedOf, countingClient, rowOf } from './support';

// Verification attempts counted in the ledger's own statements and table (README, "Verification
// attempts"), and in a table of the same layout an `AttemptCounter` names.
let db: PgSqlClient;

beforeAll(() => {
  db = new PgSqlClient();
});

afterAll(async () => {
  await db.close();
});

describe("VerificationAttemptLimit: the ledger's own counter table", () => {
  /** Attempts counted for `key` in the current window, from the ledger's table. */
  async function attemptsOf(key: string): Promise<number | undefined> {
    const rows = await db.$queryRawUnsafe<{ points: number }[]>(
      'SELECT points FROM x402_verification_attempts WHERE key = $1',
      key,
    );
    return rows[0]?.points;
  }

  it('When the limit and a claim count attempts of one client, then both count in its row of x402_verification_attempts, the one beyond the limit is refused with the seconds left, and a give-back or a verified mark gives one back', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const limit = new VerificationAttemptLimit(db, { limit: 2, windowMs: 60_000 });
    const key = `solana:${randomUUID()}`;
    expect(await limit.count(key)).toEqual({ allowed: true, count: 1, retryAfterSeconds: 60 });
    const claim = claimedOf(
      await ledger.claim({ ...buildClaimRequest(), attemptCounter: limit.counter(key) }),
    );
    expect(claim.attempt).toMatchObject({ allowed: true, count: 2 });
    const refused = await limit.count(key);
    expect(refused).toMatchObject({ allowed: false, count: 3 });
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
    await limit.giveBack(key);
    expect(await attemptsOf(key)).toBe(2);
    expect(await ledger.markVerified(claim, buildVerifiedPayment({ signature: claim.signature }))).toBe(true);
    expect(await attemptsOf(key)).toBe(1);
    expect(await limit.count(key)).toMatchObject({ allowed: true, count: 2 });
    await ledger.releaseLease(claim);
  });

  it('When a give-back comes after the window ended, then it opens a new window one below zero, as the rate limiter does', async () => {
    const limit = new VerificationAttemptLimit(db, { limit: 1, windowMs: 60_000 });
    const key = `solana:${randomUUID()}`;
    await limit.count(key);
    await db.$executeRawUnsafe(
      'UPDATE x402_verification_attempts SET expire = $2 WHERE key = $1',
      key,
      Date.now() - 1,
    );
    await limit.giveBack(key);
    expect(await attemptsOf(key)).toBe(-1);
  });

  it('When the sighting pruner runs, then counters whose window ended an hour ago are deleted and live ones kept', async () => {
    const [ended, live] = [`solana:${randomUUID()}`, `solana:${randomUUID()}`];
    await db.$executeRawUnsafe(
      'INSERT INTO x402_verification_attempts (key, points, expire) VALUES ($1, 3, $2::bigint), ($3, 3, $4::bigint)',
      ended,
      String(Date.now() - 2 * 3_600_000),
      live,
      String(Date.now() + 60_000),
    );
    await new PrismaPaymentLedger(db).pruneSightings(24 * 3_600_000);
    expect(await attemptsOf(ended)).toBeUndefined();
    expect(await attemptsOf(live)).toBe(3);
  });

  it('When the README and the test fixture are read, then they carry the exported model and its table', () => {
    expect(readFileSync(join(__dirname, '..', 'README.md'), 'utf8')).toContain(
      X402_VERIFICATION_ATTEMPT_PRISMA_MODEL,
    );
    const fixture = readFileSync(join(__dirname, '..', 'fixtures', 'x402_verification_attempts.sql'), 'utf8');
    expect(fixture).toContain('CREATE TABLE "x402_verification_attempts"');
    for (const column of ['key', 'points', 'expire']) expect(fixture).toContain(`"${column}"`);
  });
});

describe('PrismaPaymentLedger: attempts counted in its own statements', () => {
  const PREFIX = 'x402_attempts_test';

  /** A counter of `limit` attempts a minute in `rate_limits`, and the rate limiter keeping the same row. */
  function counterAndLimiter(limit: number): {
    counter: AttemptCounter;
    limiter: ReturnType<typeof createRateLimit>;
    id: string;
  } {
    const id = randomUUID();
    return {
      counter: { table: 'rate_limits', key: `${PREFIX}:${id}`, limit, windowMs: 60_000 },
      limiter: createRateLimit(db.pool, { keyPrefix: PREFIX, points: limit, durationSeconds: 60 }),
      id,
    };
  }

  async function pointsOf(counter: AttemptCounter): Promise<number | undefined> {
    const rows = await db.$queryRawUnsafe<{ points: number }[]>(
      'SELECT points FROM rate_limits WHERE key = $1',
      counter.key,
    );
    return rows[0]?.points;
  }

  /** A new request claimed by `ledger` with a counter of 20 attempts, which the claim counted once. */
  async function countedClaim(ledger: PrismaPaymentLedger): Promise<{
    counter: AttemptCounter;
    request: ReturnType<typeof buildClaimRequest>;
    claim: PaymentClaim;
  }> {
    const { counter } = counterAndLimiter(20);
    const request = buildClaimRequest();
    const claim = claimedOf(await ledger.claim({ ...request, attemptCounter: counter }));
    return { counter, request, claim };
  }

  it("When claims count attempts, then they count in the rate limiter's row, the one beyond the limit is refused with the seconds left, and a verified mark gives its attempt back", async () => {
    const ledger = new PrismaPaymentLedger(db);
    const { counter, limiter, id } = counterAndLimiter(2);
    expect(await limiter.consume(id)).toEqual({ allowed: true });
    const first = claimedOf(await ledger.claim({ ...buildClaimRequest(), attemptCounter: counter }));
    expect(first.attempt).toEqual({ allowed: true, count: 2, retryAfterSeconds: expect.any(Number) });
    const second = claimedOf(await ledger.claim({ ...buildClaimRequest(), attemptCounter: counter }));
    expect(second.attempt).toMatchObject({ allowed: false, count: 3 });
    expect(second.attempt?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(second.attempt?.retryAfterSeconds).toBeLessThanOrEqual(60);
    // The limiter sees the ledger's counts: its key is over the limit.
    expect(await limiter.refusedFor(id)).toBeGreaterThanOrEqual(1);
    await ledger.forget(second);

    expect(await ledger.markVerified(first, buildVerifiedPayment({ signature: first.signature }))).toBe(true);
    expect(await pointsOf(counter)).toBe(2);
    expect(await rowOf(db, first.signature)).toMatchObject({ status: 'verified', claim_token: first.token });
    await ledger.releaseLease(first);
  });

  it('When a verified row is taken over, then no attempt is counted; an unverified one taken over counts one', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const { counter } = counterAndLimiter(20);
    const verifiedRequest = buildClaimRequest();
    const paid = claimedOf(await ledger.claim(verifiedRequest));
    await ledger.markVerified(paid, buildVerifiedPayment({ signature: verifiedRequest.signature }));
    await ledger.releaseLease(paid);
    const retry = claimedOf(await ledger.claim({ ...verifiedRequest, attemptCounter: counter }));
    expect(retry.verified).toBeDefined();
    expect(retry.attempt).toBeUndefined();
    expect(await pointsOf(counter)).toBeUndefined();
    await ledger.releaseLease(retry);

    const seen = buildClaimRequest();
    await ledger.recordSighting(seen);
    const taken = claimedOf(await ledger.claim({ ...seen, attemptCounter: counter }));
    expect(taken).toMatchObject({ takenOver: true, attempt: { allowed: true, count: 1 } });
    await ledger.forget(taken);

    const elsewhere = buildClaimRequest({ endpoint: 'GET /elsewhere' });
    await ledger.recordSighting(elsewhere);
    const moved = claimedOf(
      await ledger.claim({ ...elsewhere, endpoint: 'GET /here', attemptCounter: counter }),
    );
    expect(moved).toMatchObject({ takenOver: true, endpoint: 'GET /here', attempt: { count: 2 } });
    await ledger.forget(moved);
  });

  it('When the verified mark has lost its lease, then the attempt is still given back', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const { counter, request, claim } = await countedClaim(ledger);
    expect(await pointsOf(counter)).toBe(1);
    const lost = { ...claim, token: 'not-the-holder' };
    expect(await ledger.markVerified(lost, buildVerifiedPayment({ signature: request.signature }))).toBe(
      false,
    );
    expect(await pointsOf(counter)).toBe(0);
    await ledger.forget(claim);
  });

  it('When the answer is stored with a deferred verification, then one statement records the payment, completes it and gives the attempt back', async () => {
    const { client, statements } = countingClient(db);
    const ledger = new PrismaPaymentLedger(client);
    const { counter, request, claim } = await countedClaim(ledger);
    expect(await pointsOf(counter)).toBe(1);
    const payment = buildVerifiedPayment({ signature: request.signature, amountAtomic: 250_000n });
    const stored = buildStoredResponse({ deferred: true });
    statements.length = 0;
    expect(await ledger.complete(claim, stored, payment)).toBe(true);
    expect(statements).toHaveLength(1);
    expect(await pointsOf(counter)).toBe(0);
    expect(await rowOf(db, request.signature)).toMatchObject({
      status: 'completed',
      claim_token: null,
      payer: payment.payer,
      amount: '250000',
      slot: String(payment.slot),
      response_status: stored.status,
    });
    const replay = await new PrismaPaymentLedger(db).claim(request);
    expect(replay).toMatchObject({ outcome: 'replay', response: stored });
  });

  it('When a deferred verification is stored after its lease was lost, then nothing is completed and the attempt is still given back', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const { counter, request, claim } = await countedClaim(ledger);
    const payment = buildVerifiedPayment({ signature: request.signature });
    const lost = { ...claim, token: 'not-the-holder' };
    expect(await ledger.complete(lost, buildStoredResponse(), payment)).toBe(false);
    expect(await pointsOf(counter)).toBe(0);
    expect(await rowOf(db, request.signature)).toMatchObject({
      status: 'processing',
      claim_token: claim.token,
    });
    await ledger.forget(claim);
  });

  it('When a lease is released with a deferred verification, then the row is verified and unheld, and a retry takes it over without counting or verifying again', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const { counter, request, claim } = await countedClaim(ledger);
    const payment = buildVerifiedPayment({ signature: request.signature });
    await ledger.releaseLease(claim, payment);
    expect(await pointsOf(counter)).toBe(0);
    expect(await rowOf(db, request.signature)).toMatchObject({
      status: 'verified',
      claim_token: null,
      payer: payment.payer,
    });
    const retry = claimedOf(await ledger.claim({ ...request, attemptCounter: counter }));
    expect(retry).toMatchObject({ takenOver: true, verified: { payer: payment.payer } });
    expect(retry.attempt).toBeUndefined();
    expect(await pointsOf(counter)).toBe(0);
    expect(await ledger.complete(retry, buildStoredResponse())).toBe(true);
  });

  it("When claims commit asynchronously, then the setting ends with each claim's own transaction and the stored answer's commit writes the claim to disk", async () => {
    // One connection, so the statements after each claim run where the claim ran.
    const single = new PgSqlClient({ connectionString: TEST_DATABASE_URL, max: 1 });
    try {
      const ledger = new PrismaPaymentLedger(single);
      const { counter } = counterAndLimiter(20);
      const setting = async () =>
        (
          await single.$queryRawUnsafe<{ s: string }[]>("SELECT current_setting('synchronous_commit') AS s")
        )[0]?.s;
      const plain = buildClaimRequest();
      const counted = buildClaimRequest();
      const plainClaim = claimedOf(await ledger.claim(plain));
      expect(await setting()).toBe('on');
      const countedClaim = claimedOf(await ledger.claim({ ...counted, attemptCounter: counter }));
      expect(await setting()).toBe('on');
      expect(await rowOf(db, plain.signature)).toMatchObject({
        status: 'processing',
        claim_token: plainClaim.token,
      });
      expect(await pointsOf(counter)).toBe(1);

      const [claimedUpTo] = await single.$queryRawUnsafe<{ lsn: string }[]>(
        'SELECT pg_current_wal_insert_lsn()::text AS lsn',
      );
      expect(await ledger.complete(countedClaim, buildStoredResponse(), buildVerifiedPayment())).toBe(true);
      const [flushed] = await single.$queryRawUnsafe<{ done: boolean }[]>(
        'SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS done',
        claimedUpTo?.lsn,
      );
      expect(flushed?.done).toBe(true);
      expect(await setting()).toBe('on');
      await ledger.release(plainClaim);
    } finally {
      await single.close();
    }
  });

  it("When the counter's window has ended, then the claim opens a new window", async () => {
    const ledger = new PrismaPaymentLedger(db);
    const { counter } = counterAndLimiter(1);
    const first = claimedOf(await ledger.claim({ ...buildClaimRequest(), attemptCounter: counter }));
    await ledger.forget(first);
    await db.$executeRawUnsafe(
      'UPDATE rate_limits SET expire = $2 WHERE key = $1',
      counter.key,
      Date.now() - 1,
    );
    const next = claimedOf(await ledger.claim({ ...buildClaimRequest(), attemptCounter: counter }));
    expect(next.attempt).toMatchObject({ allowed: true, count: 1, retryAfterSeconds: 60 });
    await ledger.forget(next);
  });

  it('When the counter table is not a plain identifier, then the claim throws before any statement', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = {
      ...buildClaimRequest(),
      attemptCounter: { ...counterAndLimiter(1).counter, table: 'x; DROP' },
    };
    await expect(ledger.claim(request)).rejects.toThrow(/plain SQL identifier/);
    expect(await rowOf(db, request.signature)).toBeUndefined();
  });
});
