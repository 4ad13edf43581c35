import { isAppError, type AppError } from '@repo/errors';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrismaPaymentLedger, X402_PAYMENT_PRISMA_MODEL, type ClaimRequest } from '../src/index';
import { buildClaimRequest, buildStoredResponse, buildVerifiedPayment } from '@repo/x402-ledger/testing';
import { claimedOf, countingClient, rowOf, replicaClients } from './support';

const { db, replicaDb } = replicaClients();

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
    const { client, statements } = countingClient(db);
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
    const { client, statements } = countingClient(db);
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
    expect(await rowOf(db, request.signature)).toMatchObject({
      status: 'processing',
      claim_token: claim.token,
    });
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
    expect(await rowOf(db, request.signature)).toMatchObject({
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
    expect(await rowOf(db, request.signature)).toMatchObject({ status: 'completed', job_id: 'job-123' });
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
    expect(await rowOf(db, request.signature)).toMatchObject({
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
    expect(await rowOf(db, request.signature)).toBeUndefined();
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
    expect(await rowOf(db, request.signature)).toMatchObject({ status: 'processing', claim_token: null });
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
    expect(await rowOf(db, old.signature)).toBeUndefined();
    expect(await rowOf(db, recent.signature)).toMatchObject({ status: 'processing' });
    expect(await rowOf(db, held.signature)).toMatchObject({
      status: 'processing',
      claim_token: heldClaim.token,
    });
    expect(await rowOf(db, verified.signature)).toMatchObject({ status: 'verified' });
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
