import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PrismaPaymentLedger, PrismaSignInRecords, X402_SIWX_NONCE_PRISMA_MODEL } from '../src/index';
import { buildClaimRequest, buildStoredResponse, buildVerifiedPayment } from '@repo/x402-ledger/testing';
import { claimedOf, replicaClients } from './support';

// Sign-in-with-x's records (README, "Sign-in-with-x"): single-use nonces across replicas, and the
// completed payments of a wallet within an access window.

const { db, replicaDb } = replicaClients();

const nonce = () => randomBytes(16).toString('hex');
const inMinutes = (minutes: number) => new Date(Date.now() + minutes * 60_000);

/** A completed sync payment of `requestHash`, verified now; returns its signature and payer. */
async function paidRequest(requestHash: string): Promise<{ signature: string; payer: string }> {
  const ledger = new PrismaPaymentLedger(db);
  const request = buildClaimRequest({ requestHash });
  const claim = claimedOf(await ledger.claim(request));
  const verified = buildVerifiedPayment({ signature: request.signature });
  expect(await ledger.markVerified(claim, verified)).toBe(true);
  expect(await ledger.complete(claim, buildStoredResponse())).toBe(true);
  return { signature: request.signature, payer: verified.payer };
}

describe('PrismaSignInRecords', () => {
  it('When two replicas use the same nonce at once, then exactly one succeeds', async () => {
    const used = nonce();
    const results = await Promise.all([
      new PrismaSignInRecords(db).useNonce(used, 'walletA', inMinutes(5)),
      new PrismaSignInRecords(replicaDb).useNonce(used, 'walletB', inMinutes(5)),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await new PrismaSignInRecords(db).useNonce(used, 'walletA', inMinutes(5))).toBe(false);
  });

  it('When nonces are pruned, then only those whose proofs expired go', async () => {
    const records = new PrismaSignInRecords(db);
    const expired = nonce();
    const live = nonce();
    await records.useNonce(expired, 'wallet', inMinutes(-1));
    await records.useNonce(live, 'wallet', inMinutes(5));
    expect(await records.pruneNonces(new Date())).toBeGreaterThanOrEqual(1);
    const left = await db.$queryRawUnsafe<{ nonce: string }[]>(
      'SELECT nonce FROM x402_siwx_nonces WHERE nonce = ANY($1::text[])',
      [expired, live],
    );
    expect(left.map((row) => row.nonce)).toEqual([live]);
  });

  it("When a wallet's paid access is looked up, then only its completed payment of that very request within the window counts", async () => {
    const records = new PrismaSignInRecords(db);
    const hash = randomBytes(32).toString('hex');
    const { signature, payer } = await paidRequest(hash);
    const query = {
      payer,
      network: 'solana' as const,
      endpoint: 'GET /api/v1/scout/gaps',
      requestHash: hash,
      since: inMinutes(-60),
    };

    expect(await records.paidAccess(query)).toEqual({
      signature,
      jobId: null,
      verifiedAt: expect.any(Date) as Date,
    });
    expect(await records.paidAccess({ ...query, since: inMinutes(1) })).toBeUndefined();
    expect(await records.paidAccess({ ...query, payer: 'another wallet' })).toBeUndefined();
    expect(await records.paidAccess({ ...query, requestHash: 'b'.repeat(64) })).toBeUndefined();
    expect(await records.paidAccess({ ...query, endpoint: 'GET /api/v1/scout/trends' })).toBeUndefined();
    expect(await records.paidAccess({ ...query, network: 'solana-devnet' })).toBeUndefined();
    expect(await records.payerOf(signature)).toBe(payer);
    expect(await records.payerOf('unknown signature')).toBeNull();
  });

  it('When the README and the test fixture are read, then they carry the exported model and its table', () => {
    expect(readFileSync(join(__dirname, '..', 'README.md'), 'utf8')).toContain(X402_SIWX_NONCE_PRISMA_MODEL);
    const fixture = readFileSync(join(__dirname, '..', 'fixtures', 'x402_siwx_nonces.sql'), 'utf8');
    expect(fixture).toContain('CREATE TABLE "x402_siwx_nonces"');
    for (const column of ['nonce', 'address', 'expires_at', 'created_at'])
      expect(fixture).toContain(`"${column}"`);
  });
});
