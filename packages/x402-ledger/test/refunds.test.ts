import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  PrismaPaymentLedger,
  PrismaRefundLedger,
  X402_REFUND_PRISMA_MODEL,
  type PaymentClaim,
} from '../src/index';
import {
  PgSqlClient,
  buildClaimRequest,
  buildVerifiedPayment,
  buildStoredResponse,
} from '@repo/x402-ledger/testing';

let db: PgSqlClient;
let payments: PrismaPaymentLedger;
let refunds: PrismaRefundLedger;

beforeAll(() => {
  db = new PgSqlClient();
  payments = new PrismaPaymentLedger(db);
  refunds = new PrismaRefundLedger(db);
});

afterAll(async () => {
  await db.close();
});

beforeEach(async () => {
  // Other tests' refunds would be due too: each test claims only what it queued.
  await db.$executeRawUnsafe('DELETE FROM x402_refunds');
});

/** A payment verified and completed with a job, as a paid compute request leaves it. */
async function paidJob(): Promise<{ signature: string; payer: string; payTo: string }> {
  const request = buildClaimRequest({ endpoint: 'POST /api/v1/forge/ideate', kind: 'async' });
  const outcome = await payments.claim(request);
  if (outcome.outcome !== 'claimed') throw new Error(`expected claimed, got ${outcome.outcome}`);
  const claim: PaymentClaim = outcome.claim;
  const payment = buildVerifiedPayment({ signature: request.signature, amountAtomic: 15_000_000n });
  await payments.markVerified(claim, payment);
  await payments.completeWithJob(claim, 'job_1');
  return { signature: request.signature, payer: payment.payer, payTo: payment.payTo };
}

const attempt = (n: number) => ({
  signature: `refund-signature-${n}-${Math.random()}`,
  transaction: 'AQID',
  lastValidBlockHeight: 1000 + n,
  destination: `paying-account-${n}`,
});

/** Makes a claimed refund due again now, as when its holder's lease ran out. */
async function endLease(signature: string): Promise<void> {
  await db.$executeRawUnsafe(
    "UPDATE x402_refunds SET next_attempt_at = now() - interval '1 second' WHERE payment_signature = $1",
    signature,
  );
}

describe('PrismaRefundLedger', () => {
  it('When a verified payment is queued twice, then one refund of its whole amount to its payer exists, naming the merchant account it was paid into', async () => {
    const { signature, payer, payTo } = await paidJob();
    expect(await refunds.queue(signature, { reason: 'job_failed:stalled', jobId: 'job_1' })).toBe('solana');
    expect(await refunds.queue(signature, { reason: 'job_failed:stalled', jobId: 'job_1' })).toBeNull();
    expect(await refunds.forPayment(signature)).toEqual(
      expect.objectContaining({
        payer,
        payTo,
        amountAtomic: 15_000_000n,
        network: 'solana',
        status: 'pending',
        jobId: 'job_1',
        signature: null,
        destination: null,
        unclaimableReason: null,
        attempts: 0,
      }),
    );
    const [claim] = await refunds.claimDue(1, 60_000);
    expect(claim?.refund).toEqual(expect.objectContaining({ paymentSignature: signature, payTo }));
  });

  it('When a payment is unknown or not verified, then nothing is queued', async () => {
    expect(await refunds.queue('unknown-signature', { reason: 'x' })).toBeNull();
    const request = buildClaimRequest();
    await payments.claim(request);
    expect(await refunds.queue(request.signature, { reason: 'x' })).toBeNull();
    expect(await refunds.forPayment(request.signature)).toBeNull();
  });

  it('When two replicas claim due refunds at once, then each refund goes to one of them', async () => {
    const queued = await Promise.all([paidJob(), paidJob(), paidJob()]);
    for (const { signature } of queued) await refunds.queue(signature, { reason: 'r' });
    const other = new PgSqlClient();
    try {
      const [a, b] = await Promise.all([
        refunds.claimDue(10, 60_000),
        new PrismaRefundLedger(other).claimDue(10, 60_000),
      ]);
      const claimed = [...a, ...b].map((c) => c.refund.paymentSignature).sort();
      expect(claimed).toEqual(queued.map((q) => q.signature).sort());
      // Claimed refunds are not due again while their lease runs.
      expect(await refunds.claimDue(10, 60_000)).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('When an attempt is recorded, then no second attempt can be recorded until it is cleared, and a lost lease writes nothing', async () => {
    const { signature } = await paidJob();
    await refunds.queue(signature, { reason: 'r' });
    const [claim] = await refunds.claimDue(1, 60_000);
    if (!claim) throw new Error('nothing claimed');
    const first = attempt(1);
    expect(await refunds.recordAttempt(claim, first)).toBe(true);
    expect(await refunds.recordAttempt(claim, attempt(2))).toBe(false);
    expect(await refunds.clearAttempt(claim, 'another-signature', 'expired')).toBe(false);

    // The lease ends (a crashed worker); another worker takes the refund over with the attempt stored.
    await endLease(signature);
    const [takeover] = await refunds.claimDue(1, 60_000);
    expect(takeover?.refund).toEqual(
      expect.objectContaining({
        signature: first.signature,
        transaction: 'AQID',
        lastValidBlockHeight: 1001,
      }),
    );
    expect(await refunds.clearAttempt(claim, first.signature, 'stale holder')).toBe(false);
    expect(await refunds.markConfirmed(claim, first.signature, 7)).toBe(false);
    if (!takeover) throw new Error('no takeover');

    expect(await refunds.clearAttempt(takeover, first.signature, 'expired without landing')).toBe(true);
    const second = attempt(3);
    expect(await refunds.recordAttempt(takeover, second)).toBe(true);
    expect(await refunds.markConfirmed(takeover, second.signature, 42)).toBe(true);
    expect(await refunds.forPayment(signature)).toEqual(
      expect.objectContaining({
        status: 'confirmed',
        signature: second.signature,
        destination: second.destination,
        slot: 42,
        attempts: 2,
        lastError: null,
        confirmedAt: expect.any(Date),
      }),
    );
    // Confirmed is final: never due again, nothing more is recorded.
    await endLease(signature);
    expect(await refunds.claimDue(10, 60_000)).toEqual([]);
    expect(await refunds.countPending()).toEqual({});
  });

  it('When refunds are queued and claimed at the same instant, then each is due (times compare at the stored millisecond precision)', async () => {
    const signatures = await Promise.all(Array.from({ length: 20 }, async () => (await paidJob()).signature));
    // Each in one transaction, so queue and claim see the same now(), which the stored time rounds up
    // half the time: twenty instants leave no chance that none rounds up.
    const claimed: string[] = [];
    for (const signature of signatures) {
      const [claim] = await db.transaction(async (tx) => {
        const ledger = new PrismaRefundLedger(tx);
        await ledger.queue(signature, { reason: 'r' });
        return ledger.claimDue(1, 60_000);
      });
      if (claim) claimed.push(claim.refund.paymentSignature);
    }
    expect(claimed).toEqual(signatures);
  });

  it('When a claim is released with a delay and an error, then the refund is due again only after the delay and keeps the error', async () => {
    const { signature } = await paidJob();
    await refunds.queue(signature, { reason: 'r' });
    const [claim] = await refunds.claimDue(1, 60_000);
    if (!claim) throw new Error('nothing claimed');
    await refunds.release(claim, 60_000, 'the refund wallet holds too little USDC');
    expect(await refunds.claimDue(1, 60_000)).toEqual([]);
    expect(await refunds.countPending()).toEqual({ solana: 1 });
    expect((await refunds.forPayment(signature))?.lastError).toBe('the refund wallet holds too little USDC');
    await refunds.release(claim, 0);
    // Released already: a second release by the old holder changes nothing (the token is gone).
    expect(await refunds.claimDue(1, 60_000)).toEqual([]);
  });

  it('When the refund is held as unclaimable, then it keeps the reason and the paying account, is never due again, is not pending, and no attempt can be recorded', async () => {
    const { signature } = await paidJob();
    await refunds.queue(signature, { reason: 'job_failed:internal' });
    const [claim] = await refunds.claimDue(1, 60_000);
    if (!claim) throw new Error('nothing claimed');
    expect(
      await refunds.markUnclaimable(claim, {
        reason: 'source_account_closed',
        destination: 'paying-account',
        detail: 'the paying token account paying-account no longer exists',
      }),
    ).toBe(true);
    expect(await refunds.forPayment(signature)).toEqual(
      expect.objectContaining({
        status: 'unclaimable',
        unclaimableReason: 'source_account_closed',
        destination: 'paying-account',
        lastError: 'the paying token account paying-account no longer exists',
        signature: null,
        attempts: 0,
        confirmedAt: null,
      }),
    );
    // Final: never claimed again, even once due, and not counted as pending.
    await endLease(signature);
    expect(await refunds.claimDue(10, 60_000)).toEqual([]);
    expect(await refunds.countPending()).toEqual({});
    expect(await refunds.recordAttempt(claim, attempt(1))).toBe(false);
    const row = await db.$queryRawUnsafe<{ claim_token: string | null }[]>(
      'SELECT claim_token FROM x402_refunds WHERE payment_signature = $1',
      signature,
    );
    expect(row).toEqual([{ claim_token: null }]);
  });

  it('When a refund stops being pending while a worker holds it (an operator settled it by hand), then that worker can record no attempt', async () => {
    const { signature } = await paidJob();
    await refunds.queue(signature, { reason: 'r' });
    const [claim] = await refunds.claimDue(1, 60_000);
    if (!claim) throw new Error('nothing claimed');
    await db.$executeRawUnsafe(
      "UPDATE x402_refunds SET status = 'confirmed', confirmed_at = now() WHERE payment_signature = $1",
      signature,
    );
    expect(await refunds.recordAttempt(claim, attempt(1))).toBe(false);
    expect(await refunds.forPayment(signature)).toEqual(
      expect.objectContaining({ status: 'confirmed', signature: null, attempts: 0 }),
    );
  });

  it('When the lease was lost or an attempt is current, then the refund cannot be held as unclaimable', async () => {
    const { signature } = await paidJob();
    await refunds.queue(signature, { reason: 'r' });
    const [claim] = await refunds.claimDue(1, 60_000);
    if (!claim) throw new Error('nothing claimed');
    const hold = { reason: 'source_account_closed', destination: null, detail: 'gone' };

    // A stored attempt may still land: it is watched, never abandoned.
    const current = attempt(1);
    expect(await refunds.recordAttempt(claim, current)).toBe(true);
    expect(await refunds.markUnclaimable(claim, hold)).toBe(false);

    // Another worker takes the refund over: the old holder can hold nothing.
    await endLease(signature);
    const [takeover] = await refunds.claimDue(1, 60_000);
    if (!takeover) throw new Error('no takeover');
    expect(await refunds.clearAttempt(takeover, current.signature, 'expired without landing')).toBe(true);
    expect(await refunds.markUnclaimable(claim, hold)).toBe(false);
    expect(await refunds.forPayment(signature)).toEqual(
      expect.objectContaining({ status: 'pending', unclaimableReason: null }),
    );
    expect(await refunds.markUnclaimable(takeover, hold)).toBe(true);
    expect((await refunds.forPayment(signature))?.status).toBe('unclaimable');
  });

  it('When a completed synchronous payment is queued, then its amount and payer are taken from the ledger', async () => {
    const request = buildClaimRequest();
    const outcome = await payments.claim(request);
    if (outcome.outcome !== 'claimed') throw new Error('not claimed');
    const payment = buildVerifiedPayment({ signature: request.signature, amountAtomic: 100_000n });
    await payments.markVerified(outcome.claim, payment);
    await payments.complete(outcome.claim, buildStoredResponse());
    expect(await refunds.queue(request.signature, { reason: 'r' })).toBe('solana');
    expect((await refunds.forPayment(request.signature))?.amountAtomic).toBe(100_000n);
  });
});

describe('the refund Prisma model', () => {
  it('When the README and the test fixture are read, then they carry the exported model and every column it maps', () => {
    expect(readFileSync(join(__dirname, '..', 'README.md'), 'utf8')).toContain(X402_REFUND_PRISMA_MODEL);
    const fixture = readFileSync(join(__dirname, '..', 'fixtures', 'x402_refunds.sql'), 'utf8');
    const mapped = [...X402_REFUND_PRISMA_MODEL.matchAll(/@map\("([a-z_]+)"\)/g)].map((m) => m[1]);
    const plain = [...X402_REFUND_PRISMA_MODEL.matchAll(/^ {2}([a-z]+) +\S+(?:(?!@map).)*$/gm)].map(
      (m) => m[1],
    );
    for (const column of [...mapped, ...plain]) expect(fixture).toContain(`"${column}"`);
    expect(fixture).toContain('CREATE TABLE "x402_refunds"');
  });
});
