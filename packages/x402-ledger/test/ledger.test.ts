import { isAppError, type AppError } from '@repo/errors';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRateLimit } from '@repo/service-kit';
import { join } from 'node:path';
import {
  PrismaPaymentLedger,
  X402_PAYMENT_PRISMA_MODEL,
  type AttemptCounter,
  type ClaimOutcome,
  type ClaimRequest,
  type PaymentClaim,
  type SqlClient,
} from '../src/index';
import {
  PgSqlClient,
  TEST_DATABASE_URL,
  buildClaimRequest,
  buildStoredResponse,
  buildVerifiedPayment,
} from '@repo/x402-ledger/testing';

let db: PgSqlClient;
let replicaDb: PgSqlClient;

beforeAll(() => {
  db = new PgSqlClient();
  replicaDb = new PgSqlClient();
});

afterAll(async () => {
  await db.close();
  await replicaDb.close();
});

function claimedOf(outcome: ClaimOutcome): PaymentClaim {
  if (outcome.outcome !== 'claimed') throw new Error(`expected claimed, got ${outcome.outcome}`);
  return outcome.claim;
}

async function rowOf(signature: string): Promise<Record<string, unknown> | undefined> {
  const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(
    'SELECT status, claim_token, payer, amount_atomic::text AS amount, slot::text AS slot, job_id, response_status FROM x402_payments WHERE signature = $1',
    signature,
  );
  return rows[0];
}

/** The test database as a {@link SqlClient} that lists every statement it runs. */
function countingClient(): { client: SqlClient; statements: string[] } {
  const statements: string[] = [];
  const client: SqlClient = {
    $queryRawUnsafe: <T>(sql: string, ...values: unknown[]) => {
      statements.push(sql);
      return db.$queryRawUnsafe<T>(sql, ...values);
    },
    $executeRawUnsafe: (sql: string, ...values: unknown[]) => {
      statements.push(sql);
      return db.$executeRawUnsafe(sql, ...values);
    },
  };
  return { client, statements };
}

describe('PrismaPaymentLedger: claims for another endpoint while unverified', () => {
  it('When another endpoint holds an unverified claim, then the answer is busy (retry in 1 s), not a final refusal', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    const claim = claimedOf(await ledger.claim(request));
    const other = await new PrismaPaymentLedger(replicaDb).claim({ ...request, endpoint: 'GET /elsewhere' });
    expect(other).toMatchObject({ outcome: 'busy', retryAfterSeconds: 1 });
    await ledger.release(claim);
  });

  it('When an unverified claim for another endpoint was abandoned, then it is taken over for this endpoint (nothing was consumed)', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    claimedOf(await ledger.claim(request));
    // The holder died a minute ago: its 30 s lease is long over.
    await db.$executeRawUnsafe(
      "UPDATE x402_payments SET claimed_at = now() - interval '1 minute' WHERE signature = $1",
      request.signature,
    );
    const moved = claimedOf(
      await new PrismaPaymentLedger(replicaDb).claim({ ...request, endpoint: 'GET /elsewhere' }),
    );
    expect(moved).toMatchObject({ endpoint: 'GET /elsewhere', takenOver: true });
    const rows = await db.$queryRawUnsafe<{ endpoint: string; claim_token: string }[]>(
      'SELECT endpoint, claim_token FROM x402_payments WHERE signature = $1',
      request.signature,
    );
    expect(rows).toEqual([{ endpoint: 'GET /elsewhere', claim_token: moved.token }]);
  });

  it('When an asynchronous payment is presented again, then only a request with the paying body learns the job id', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = { ...buildClaimRequest(), kind: 'async' as const, requestHash: 'a'.repeat(64) };
    const claim = claimedOf(await ledger.claim(request));
    await ledger.markVerified(claim, buildVerifiedPayment({ signature: request.signature }));
    await ledger.completeWithJob(claim, 'job_paid');
    expect(await ledger.claim(request)).toMatchObject({ outcome: 'conflict', jobId: 'job_paid' });
    expect(await ledger.claim({ ...request, requestHash: 'b'.repeat(64) })).toMatchObject({
      outcome: 'conflict',
      jobId: null,
    });
    const { requestHash: _none, ...withoutHash } = request;
    expect(await ledger.claim(withoutHash)).toMatchObject({ outcome: 'conflict', jobId: null });
  });
});

describe('PrismaPaymentLedger: a payment is bound to the request it paid for', () => {
  const paid = 'a'.repeat(64);
  const other = 'b'.repeat(64);

  async function completed(request: ClaimRequest): Promise<void> {
    const ledger = new PrismaPaymentLedger(db);
    const claim = claimedOf(await ledger.claim(request));
    await ledger.complete(claim, buildStoredResponse({ paid: true }), buildVerifiedPayment());
  }

  it('When a completed payment is presented on another request of its endpoint, then it is refused as another endpoint is, from the database and from memory', async () => {
    const request = buildClaimRequest({ requestHash: paid });
    await completed(request);
    const fresh = new PrismaPaymentLedger(replicaDb);
    expect((await fresh.claim({ ...request, requestHash: other })).outcome).toBe('other_endpoint');
    const { requestHash: _none, ...unbound } = request;
    expect((await fresh.claim(unbound)).outcome).toBe('other_endpoint');
    // The genuine retry replays, and leaves the row in this instance's memory.
    expect(await fresh.claim(request)).toMatchObject({ outcome: 'replay', response: { status: 200 } });
    expect((await fresh.claim({ ...request, requestHash: other })).outcome).toBe('other_endpoint');
    expect((await fresh.claim(request)).outcome).toBe('replay');
  });

  it('When a verified payment whose answer was never stored is taken over by another request, then it is refused, and the paying request still gets it', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest({ requestHash: paid });
    const claim = claimedOf(await ledger.claim(request));
    // The handler failed (or the payer's connection dropped): verified, no answer, lease released.
    await ledger.releaseLease(claim, buildVerifiedPayment({ signature: request.signature }));
    const replica = new PrismaPaymentLedger(replicaDb);
    expect((await replica.claim({ ...request, requestHash: other })).outcome).toBe('other_endpoint');
    const retry = claimedOf(await replica.claim(request));
    expect(retry.verified).toMatchObject({ signature: request.signature });
    // While the paying request holds it, another request is refused at once rather than kept waiting.
    expect((await ledger.claim({ ...request, requestHash: other })).outcome).toBe('other_endpoint');
    await replica.releaseLease(retry);
  });

  it('When a verified asynchronous payment whose job was never created is presented with another body, then it is a conflict without a job id, and the paying request takes it over', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest({
      kind: 'async',
      endpoint: 'POST /api/v1/forge/ideate',
      requestHash: paid,
    });
    const claim = claimedOf(await ledger.claim(request));
    await ledger.releaseLease(claim, buildVerifiedPayment({ signature: request.signature }));
    const replica = new PrismaPaymentLedger(replicaDb);
    expect(await replica.claim({ ...request, requestHash: other })).toMatchObject({
      outcome: 'conflict',
      jobId: null,
    });
    const retry = claimedOf(await replica.claim(request));
    expect(retry.verified).toMatchObject({ signature: request.signature });
    await replica.releaseLease(retry);
  });

  it('When an abandoned unverified claim is taken over by another request, then the row is bound to the new request', async () => {
    const request = buildClaimRequest({ requestHash: paid });
    claimedOf(await new PrismaPaymentLedger(db).claim(request));
    await db.$executeRawUnsafe(
      "UPDATE x402_payments SET claimed_at = now() - interval '1 minute' WHERE signature = $1",
      request.signature,
    );
    const moved = claimedOf(
      await new PrismaPaymentLedger(replicaDb).claim({ ...request, requestHash: other }),
    );
    expect(moved).toMatchObject({ takenOver: true, requestHash: other });
    const rows = await db.$queryRawUnsafe<{ request_hash: string }[]>(
      'SELECT request_hash FROM x402_payments WHERE signature = $1',
      request.signature,
    );
    expect(rows).toEqual([{ request_hash: other }]);
  });

  it('When a sighting is recorded, then it carries the request hash', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest({ requestHash: paid });
    await ledger.recordSighting(request);
    expect(await ledger.find(request.signature)).toMatchObject({ requestHash: paid, status: 'processing' });
  });
});

describe('PrismaPaymentLedger', () => {
  it('When a completed payment is presented again, then later replays are answered from memory without a query', async () => {
    const { client, statements } = countingClient();
    const ledger = new PrismaPaymentLedger(client);
    const request = buildClaimRequest();
    const claim = claimedOf(await ledger.claim(request));
    await ledger.markVerified(claim, buildVerifiedPayment({ signature: request.signature }));
    const stored = buildStoredResponse({ ok: true });
    await ledger.complete(claim, stored);
    expect((await ledger.claim(request)).outcome).toBe('replay');
    const afterFirstReplay = statements.length;
    const replays = await Promise.all(Array.from({ length: 20 }, () => ledger.claim(request)));
    expect(replays.every((r) => r.outcome === 'replay' && r.response.body === stored.body)).toBe(true);
    expect((await ledger.claim({ ...request, endpoint: 'GET /other' })).outcome).toBe('other_endpoint');
    expect(statements).toHaveLength(afterFirstReplay);
  });

  it('When completed answers exceed settledCacheBytes, then the least recently used leave memory and replay from the database', async () => {
    const { client, statements } = countingClient();
    const ledger = new PrismaPaymentLedger(client, { settledCacheBytes: 2_500 });
    const requests = [1, 2, 3].map(() => buildClaimRequest());
    for (const request of requests) {
      const claim = claimedOf(await ledger.claim(request));
      await ledger.complete(claim, buildStoredResponse({ text: 'x'.repeat(1_000) }), buildVerifiedPayment());
      expect((await ledger.claim(request)).outcome).toBe('replay'); // read once, now in memory
    }
    const [first, , third] = requests as [ClaimRequest, ClaimRequest, ClaimRequest];
    const before = statements.length;
    expect((await ledger.claim(third)).outcome).toBe('replay');
    expect(statements).toHaveLength(before);
    // Two answers of ~1 KB fit in 2.5 KB: the first one was evicted when the third came.
    expect((await ledger.claim(first)).outcome).toBe('replay');
    expect(statements.length).toBeGreaterThan(before);
  });

  it('When a new signature is claimed, then one processing row exists with a lease token', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    const claim = claimedOf(await ledger.claim(request));
    expect(claim).toMatchObject({ ...request, takenOver: false });
    expect(await rowOf(request.signature)).toMatchObject({ status: 'processing', claim_token: claim.token });
    await ledger.release(claim);
  });

  it('When a synchronous payment completed, then the same endpoint replays the stored answer', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    const claim = claimedOf(await ledger.claim(request));
    const payment = buildVerifiedPayment({
      signature: request.signature,
      amountAtomic: 12345678901234567890n,
    });
    expect(await ledger.markVerified(claim, payment)).toBe(true);
    const stored = buildStoredResponse({ gaps: [{ title: 'ü' }], count: 1 });
    expect(await ledger.complete(claim, stored)).toBe(true);

    const again = await ledger.claim(request);
    expect(again.outcome).toBe('replay');
    if (again.outcome !== 'replay') return;
    expect(again.response).toEqual(stored);
    expect(again.record).toMatchObject({
      status: 'completed',
      payer: payment.payer,
      amountAtomic: 12345678901234567890n,
      slot: 42,
      blockTime: payment.blockTime,
    });
    expect(await rowOf(request.signature)).toMatchObject({
      status: 'completed',
      claim_token: null,
      response_status: 200,
    });
  });

  it('When the signature was verified for another endpoint or network, then other_endpoint', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    const claim = claimedOf(await ledger.claim(request));
    await ledger.markVerified(claim, buildVerifiedPayment({ signature: request.signature }));
    expect((await ledger.claim({ ...request, endpoint: 'GET /api/v1/scout/trends' })).outcome).toBe(
      'other_endpoint',
    );
    expect((await ledger.claim({ ...request, network: 'solana-devnet' })).outcome).toBe('other_endpoint');
    await ledger.releaseLease(claim);
  });

  it('When an asynchronous payment created a job, then the same endpoint and body get conflict with the job id', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest({
      endpoint: 'POST /api/v1/forge/ideate',
      kind: 'async',
      requestHash: 'c'.repeat(64),
    });
    const claim = claimedOf(await ledger.claim(request));
    await ledger.markVerified(claim, buildVerifiedPayment({ signature: request.signature }));
    await db.transaction(async (tx) => {
      await ledger.completeWithJob(claim, 'job-123', tx);
    });
    const again = await ledger.claim(request);
    expect(again).toMatchObject({ outcome: 'conflict', jobId: 'job-123' });
    expect(await rowOf(request.signature)).toMatchObject({ status: 'completed', job_id: 'job-123' });
  });

  it('When the job transaction rolls back, then the payment stays verified and a retry takes it over without verifying again', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest({ endpoint: 'POST /api/v1/prove/debate', kind: 'async' });
    const claim = claimedOf(await ledger.claim(request));
    const payment = buildVerifiedPayment({ signature: request.signature });
    await ledger.markVerified(claim, payment);
    await expect(
      db.transaction(async (tx) => {
        await ledger.completeWithJob(claim, 'job-rolled-back', tx);
        throw new Error('job insert failed');
      }),
    ).rejects.toThrow('job insert failed');
    await ledger.releaseLease(claim);
    expect(await rowOf(request.signature)).toMatchObject({
      status: 'verified',
      job_id: null,
      claim_token: null,
    });

    const retry = claimedOf(await ledger.claim(request));
    expect(retry.takenOver).toBe(true);
    expect(retry.verified).toEqual({ ...payment, rpcMs: 0 });
  });

  it('When a claim is forgotten (not found on chain), then its row is gone and the signature can be claimed again', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    await ledger.forget(claimedOf(await ledger.claim(request)));
    expect(await rowOf(request.signature)).toBeUndefined();
    const again = claimedOf(await ledger.claim({ ...request, endpoint: 'GET /api/v1/scout/keywords' }));
    expect(again.takenOver).toBe(false);
    await ledger.forget(again);
  });

  it('When a claim is released after a failed verification, then the next claim takes it over with the first sighting kept', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    const first = claimedOf(await ledger.claim(request));
    // First seen ten minutes ago, as if the payer had been answered 503 and waited.
    await db.$executeRawUnsafe(
      "UPDATE x402_payments SET created_at = now() - interval '10 minutes' WHERE signature = $1",
      request.signature,
    );
    await ledger.release(first);
    expect(await rowOf(request.signature)).toMatchObject({ status: 'processing', claim_token: null });
    const again = claimedOf(await new PrismaPaymentLedger(replicaDb).claim(request));
    expect(again.takenOver).toBe(true);
    expect(again.verified).toBeUndefined();
    expect(Date.now() - again.firstSeenAt.getTime()).toBeGreaterThanOrEqual(9 * 60_000);
    await ledger.forget(again);
  });

  it('When a sighting is recorded before any claim, then the claim that follows counts from it, and a second sighting changes nothing', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    await ledger.recordSighting(request);
    await db.$executeRawUnsafe(
      "UPDATE x402_payments SET created_at = now() - interval '9 minutes' WHERE signature = $1",
      request.signature,
    );
    await ledger.recordSighting(request);
    const claim = claimedOf(await ledger.claim(request));
    expect(Date.now() - claim.firstSeenAt.getTime()).toBeGreaterThanOrEqual(8 * 60_000);
    await ledger.forget(claim);
  });

  it('When sightings are pruned, then only old unheld unverified rows go', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const old = buildClaimRequest();
    const recent = buildClaimRequest();
    const held = buildClaimRequest();
    const verified = buildClaimRequest();
    await ledger.recordSighting(old);
    await ledger.recordSighting(recent);
    const heldClaim = claimedOf(await ledger.claim(held));
    const verifiedClaim = claimedOf(await ledger.claim(verified));
    await ledger.markVerified(verifiedClaim, buildVerifiedPayment({ signature: verified.signature }));
    await ledger.releaseLease(verifiedClaim);
    await db.$executeRawUnsafe(
      "UPDATE x402_payments SET created_at = now() - interval '2 days' WHERE signature = ANY($1)",
      [old.signature, held.signature, verified.signature],
    );
    expect(await ledger.pruneSightings(24 * 3600_000)).toBeGreaterThanOrEqual(1);
    expect(await rowOf(old.signature)).toBeUndefined();
    expect(await rowOf(recent.signature)).toMatchObject({ status: 'processing' });
    expect(await rowOf(held.signature)).toMatchObject({ status: 'processing', claim_token: heldClaim.token });
    expect(await rowOf(verified.signature)).toMatchObject({ status: 'verified' });
    await ledger.forget(heldClaim);
  });

  it('When a completeWithJob has lost its lease, then it throws payment_conflict', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest({ kind: 'async', endpoint: 'POST /api/v1/forge/ideate' });
    const claim = claimedOf(await ledger.claim(request));
    await ledger.markVerified(claim, buildVerifiedPayment({ signature: request.signature }));
    let caught: AppError | undefined;
    try {
      await ledger.completeWithJob({ ...claim, token: 'not-the-holder' }, 'job-x');
    } catch (error) {
      if (isAppError(error)) caught = error;
    }
    expect(caught?.code).toBe('payment_conflict');
    await ledger.releaseLease(claim);
  });

  it('When another replica holds the signature and completes, then the waiting replica replays it', async () => {
    const replicaA = new PrismaPaymentLedger(db, { pollIntervalMs: 20 });
    const replicaB = new PrismaPaymentLedger(replicaDb, { pollIntervalMs: 20 });
    const request = buildClaimRequest();
    const claim = claimedOf(await replicaA.claim(request));
    let settled = false;
    const waiting = replicaB.claim(request).finally(() => {
      settled = true;
    });
    await replicaA.markVerified(claim, buildVerifiedPayment({ signature: request.signature }));
    expect(settled).toBe(false);
    const stored = buildStoredResponse({ replica: 'A' });
    await replicaA.complete(claim, stored);
    const outcome = await waiting;
    expect(outcome).toMatchObject({ outcome: 'replay', response: stored });
  });

  it('When the holder crashed, then another replica waits while its lease lasts and takes the row over once it expired', async () => {
    const crashed = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    const first = claimedOf(await crashed.claim(request));
    // While the lease lasts, the other replica only waits (and gives up after its wait timeout).
    const impatient = new PrismaPaymentLedger(replicaDb, { waitTimeoutMs: 100, pollIntervalMs: 20 });
    expect((await impatient.claim(request)).outcome).toBe('busy');
    // The holder died a minute ago: its 30 s lease is over.
    await db.$executeRawUnsafe(
      "UPDATE x402_payments SET claimed_at = now() - interval '1 minute' WHERE signature = $1",
      request.signature,
    );
    const second = claimedOf(await new PrismaPaymentLedger(replicaDb).claim(request));
    expect(second.takenOver).toBe(true);
    expect(second.verified).toBeUndefined();
    expect(second.token).not.toBe(first.token);
    // The crashed holder can no longer write.
    expect(await crashed.markVerified(first, buildVerifiedPayment({ signature: request.signature }))).toBe(
      false,
    );
    await new PrismaPaymentLedger(replicaDb).forget(second);
  });

  it('When the holder keeps the signature past the wait timeout, then busy', async () => {
    const holder = new PrismaPaymentLedger(db);
    const impatient = new PrismaPaymentLedger(replicaDb, { waitTimeoutMs: 150, pollIntervalMs: 20 });
    const request = buildClaimRequest();
    const claim = claimedOf(await holder.claim(request));
    expect((await impatient.claim(request)).outcome).toBe('busy');
    await holder.release(claim);
  });

  it('When 20 requests in one process claim one signature, then one claims and the others replay after it completes', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const request = buildClaimRequest();
    const outcomes = Array.from({ length: 20 }, () => ledger.claim(request));
    const first = claimedOf(await Promise.race(outcomes));
    await ledger.markVerified(first, buildVerifiedPayment({ signature: request.signature }));
    await ledger.complete(first, buildStoredResponse({ once: true }));
    const all = await Promise.all(outcomes);
    expect(all.filter((o) => o.outcome === 'claimed')).toHaveLength(1);
    expect(all.filter((o) => o.outcome === 'replay')).toHaveLength(19);
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
    expect(await rowOf(first.signature)).toMatchObject({ status: 'verified', claim_token: first.token });
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
    const { client, statements } = countingClient();
    const ledger = new PrismaPaymentLedger(client);
    const { counter, request, claim } = await countedClaim(ledger);
    expect(await pointsOf(counter)).toBe(1);
    const payment = buildVerifiedPayment({ signature: request.signature, amountAtomic: 250_000n });
    const stored = buildStoredResponse({ deferred: true });
    statements.length = 0;
    expect(await ledger.complete(claim, stored, payment)).toBe(true);
    expect(statements).toHaveLength(1);
    expect(await pointsOf(counter)).toBe(0);
    expect(await rowOf(request.signature)).toMatchObject({
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
    expect(await rowOf(request.signature)).toMatchObject({ status: 'processing', claim_token: claim.token });
    await ledger.forget(claim);
  });

  it('When a lease is released with a deferred verification, then the row is verified and unheld, and a retry takes it over without counting or verifying again', async () => {
    const ledger = new PrismaPaymentLedger(db);
    const { counter, request, claim } = await countedClaim(ledger);
    const payment = buildVerifiedPayment({ signature: request.signature });
    await ledger.releaseLease(claim, payment);
    expect(await pointsOf(counter)).toBe(0);
    expect(await rowOf(request.signature)).toMatchObject({
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
      expect(await rowOf(plain.signature)).toMatchObject({
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
    expect(await rowOf(request.signature)).toBeUndefined();
  });
});

describe('the Prisma model', () => {
  it('When the README and the test fixture are read, then they carry the exported model and every column it maps', () => {
    expect(readFileSync(join(__dirname, '..', 'README.md'), 'utf8')).toContain(X402_PAYMENT_PRISMA_MODEL);
    const fixture = readFileSync(join(__dirname, '..', 'fixtures', 'x402_payments.sql'), 'utf8');
    const mapped = [...X402_PAYMENT_PRISMA_MODEL.matchAll(/@map\("([a-z_]+)"\)/g)].map((m) => m[1]);
    const plain = [...X402_PAYMENT_PRISMA_MODEL.matchAll(/^ {2}([a-z]+) +\S+(?:(?!@map).)*$/gm)].map(
      (m) => m[1],
    );
    for (const column of [...mapped, ...plain]) expect(fixture).toContain(`"${column}"`);
    expect(fixture).toContain('CREATE TABLE "x402_payments"');
  });
});
