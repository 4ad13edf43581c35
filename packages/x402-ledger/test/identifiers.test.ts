import { Keypair } from '@solana/web3.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSignature } from '@repo/x402-core/testing';
import {
  PrismaPaymentIdentifiers,
  PrismaPaymentLedger,
  X402_PAYMENT_IDENTIFIER_PRISMA_MODEL,
  type IdentifierBinding,
} from '../src/index';
import {
  PgSqlClient,
  buildClaimRequest,
  buildStoredResponse,
  buildVerifiedPayment,
} from '@repo/x402-ledger/testing';
import { claimedOf, replicaClients } from './support';

// Payment identifiers (README, "Payment identifiers"): one row per payer wallet and identifier, bound
// before any network call, naming the payment that answers every retry carrying it.

const { db, replicaDb } = replicaClients();

function buildBinding(overrides: Partial<IdentifierBinding> = {}): IdentifierBinding {
  return {
    payer: Keypair.generate().publicKey.toBase58(),
    identifier: `pay_${buildSignature().slice(0, 32)}`,
    signature: buildSignature(),
    network: 'solana',
    endpoint: 'GET /api/v1/scout/gaps',
    requestHash: 'a'.repeat(64),
    ...overrides,
  };
}

describe('PrismaPaymentIdentifiers', () => {
  it('When an identifier is new, then it is bound to the payment presented; a retry with another payment for the same request follows the first', async () => {
    const identifiers = new PrismaPaymentIdentifiers(db);
    const first = buildBinding();
    expect(await identifiers.bind(first)).toEqual({ outcome: 'bound', signature: first.signature });
    const retry = { ...first, signature: buildSignature() };
    expect(await new PrismaPaymentIdentifiers(replicaDb).bind(retry)).toEqual({
      outcome: 'existing',
      signature: first.signature,
    });
    expect(await identifiers.bind(first)).toEqual({ outcome: 'existing', signature: first.signature });
    expect(await identifiers.boundTo(first.payer, first.identifier)).toBe(first.signature);
  });

  it.each<[string, Partial<IdentifierBinding>]>([
    ['another request of the endpoint', { requestHash: 'b'.repeat(64) }],
    ['another endpoint', { endpoint: 'GET /api/v1/scout/trends' }],
    ['another network', { network: 'solana-devnet' }],
  ])('When the identifier is presented for %s, then the answer is conflict', async (_, change) => {
    const identifiers = new PrismaPaymentIdentifiers(db);
    const first = buildBinding();
    await identifiers.bind(first);
    expect(await identifiers.bind({ ...first, ...change, signature: buildSignature() })).toEqual({
      outcome: 'conflict',
    });
  });

  it('When two payers use the same identifier, then each has its own', async () => {
    const identifiers = new PrismaPaymentIdentifiers(db);
    const a = buildBinding();
    const b = buildBinding({ identifier: a.identifier, requestHash: 'c'.repeat(64) });
    expect(await identifiers.bind(a)).toMatchObject({ outcome: 'bound' });
    expect(await identifiers.bind(b)).toMatchObject({ outcome: 'bound' });
  });

  it('When eight replicas bind one identifier at once with eight payments, then one is bound and all follow it', async () => {
    const clients = Array.from({ length: 8 }, () => new PgSqlClient());
    try {
      const first = buildBinding();
      const outcomes = await Promise.all(
        clients.map((client) =>
          new PrismaPaymentIdentifiers(client).bind({ ...first, signature: buildSignature() }),
        ),
      );
      const bound = outcomes.filter((o) => o.outcome === 'bound');
      expect(bound).toHaveLength(1);
      const signature = bound[0]!.outcome === 'bound' ? bound[0]!.signature : '';
      for (const outcome of outcomes) expect(outcome).toMatchObject({ signature });
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('When the identifier is rebound, then only from the payment it names (compare-and-set)', async () => {
    const identifiers = new PrismaPaymentIdentifiers(db);
    const first = buildBinding();
    await identifiers.bind(first);
    const retry = { ...first, signature: buildSignature() };
    const other = { ...first, signature: buildSignature() };
    expect(await identifiers.rebind(retry, first.signature)).toBe(true);
    expect(await identifiers.rebind(other, first.signature)).toBe(false);
    expect(await identifiers.boundTo(first.payer, first.identifier)).toBe(retry.signature);
    expect(await identifiers.rebind({ ...other, requestHash: 'd'.repeat(64) }, retry.signature)).toBe(false);
  });

  it('When unbound, then only while it names the payment given, and the identifier is free again', async () => {
    const identifiers = new PrismaPaymentIdentifiers(db);
    const first = buildBinding();
    await identifiers.bind(first);
    await identifiers.unbind({ ...first, signature: buildSignature() });
    expect(await identifiers.boundTo(first.payer, first.identifier)).toBe(first.signature);
    await identifiers.unbind(first);
    expect(await identifiers.boundTo(first.payer, first.identifier)).toBeNull();
    const retry = { ...first, signature: buildSignature() };
    expect(await identifiers.bind(retry)).toEqual({ outcome: 'bound', signature: retry.signature });
  });

  it('When pruned, then identifiers of payments that never verified go and those of answered payments stay', async () => {
    const identifiers = new PrismaPaymentIdentifiers(db);
    const ledger = new PrismaPaymentLedger(db);
    const answered = buildBinding();
    const claim = claimedOf(await ledger.claim(buildClaimRequest({ signature: answered.signature })));
    await ledger.complete(
      claim,
      buildStoredResponse(),
      buildVerifiedPayment({ signature: answered.signature }),
    );
    const held = buildBinding();
    const heldClaim = claimedOf(await ledger.claim(buildClaimRequest({ signature: held.signature })));
    const neverPaid = buildBinding();
    for (const binding of [answered, held, neverPaid]) await identifiers.bind(binding);
    await db.$executeRawUnsafe(
      `UPDATE x402_payment_identifiers SET created_at = now() - interval '2 days' WHERE identifier = ANY($1::text[])`,
      [answered.identifier, held.identifier, neverPaid.identifier],
    );
    expect(await identifiers.prune(24 * 3_600_000)).toBeGreaterThanOrEqual(1);
    expect(await identifiers.boundTo(neverPaid.payer, neverPaid.identifier)).toBeNull();
    expect(await identifiers.boundTo(answered.payer, answered.identifier)).toBe(answered.signature);
    expect(await identifiers.boundTo(held.payer, held.identifier)).toBe(held.signature);
    await ledger.forget(heldClaim);
  });
});

describe('the Prisma model of payment identifiers', () => {
  it('When the README and the test fixture are read, then they carry the exported model and its table', () => {
    expect(readFileSync(join(__dirname, '..', 'README.md'), 'utf8')).toContain(
      X402_PAYMENT_IDENTIFIER_PRISMA_MODEL,
    );
    const fixture = readFileSync(join(__dirname, '..', 'fixtures', 'x402_payment_identifiers.sql'), 'utf8');
    expect(fixture).toContain('CREATE TABLE "x402_payment_identifiers"');
    for (const column of ['payer', 'identifier', 'signature', 'request_hash', 'created_at'])
      expect(fixture).toContain(`"${column}"`);
  });
});
