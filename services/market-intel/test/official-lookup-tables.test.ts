import {
  type AddressLookupTableAccount,
  Keypair,
  PublicKey,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import type { PaymentPayload } from '@x402/core/types';
import { decodePaymentResponseHeader } from '@x402/fetch';
import { bs58, createLookupTable, deactivateLookupTable, lookupTableAccount } from '@repo/solana-localnet';
import { associatedTokenAccountOf } from '@repo/x402-solana';
import { buildReport, startHarness, type Harness } from './support/harness';
import {
  balances,
  fundedWallet,
  interceptedReplica,
  officialPayload,
  sendPayment,
} from './support/official-client';

// Official-scheme payments whose transaction loads accounts from address lookup tables, accepted as
// the official facilitator accepted them (docs/payments.md, "Paying with an official x402 client"):
// the official client's transaction, recompiled by web3.js to load its accounts from tables the
// real Address Lookup Table program wrote on the local ledger.
jest.setTimeout(90_000);

const MEMO = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const PRICE = 50_000n;
const KEYWORDS = '/api/v1/scout/keywords';
let h: Harness;
/** A replica whose settler's and verifier's RPC calls are counted on their way to the ledger. */
let intercepted: Awaited<ReturnType<typeof interceptedReplica>>;
/** The RPC methods the replica called, oldest first. */
const calls = () => intercepted.rpc.calls;
/** The paid route, on the replica. */
const paidUrl = () => intercepted.replica.baseUrl + KEYWORDS;

beforeAll(async () => {
  h = await startHarness('market_intel_official_lookup_tables_test');
  await h.reports.importReport(buildReport(), 'import');
  intercepted = await interceptedReplica(h, 'lookup-tables');
}, 180_000);

afterAll(async () => {
  await intercepted?.close();
  await h?.close();
});

const wallet = () => fundedWallet(h);

/** The transfer's source (the payer's token account), the mint and the merchant's token account. */
function transferAccounts(payer: Keypair): PublicKey[] {
  const { mint, merchantTokenAccount } = h.ledger.networks.solana;
  return [associatedTokenAccountOf(payer.publicKey.toBase58(), mint), mint, merchantTokenAccount].map(
    (address) => new PublicKey(address),
  );
}

/** A table holding `addresses` on the ledger, read back by web3.js. */
async function tableOf(addresses: PublicKey[]): Promise<AddressLookupTableAccount> {
  const addressList = addresses.map((a) => a.toBase58());
  return (await createLookupTable({ rpcUrl: h.rpcUrls.solana, addresses: addressList })).account;
}

/** A table that says it is at `key` and holds `addresses` (whatever the ledger holds there). */
const claimedTable = lookupTableAccount;

/**
 * The official client's `payload` with its transaction recompiled (web3.js) to load what it can from
 * `tables`, with `extra` instructions after its own, and signed again by `payer`.
 */
function withTables(
  payload: PaymentPayload,
  payer: Keypair,
  tables: AddressLookupTableAccount[],
  extra: TransactionInstruction[] = [],
): PaymentPayload {
  const official = VersionedTransaction.deserialize(
    Buffer.from(String(payload.payload.transaction), 'base64'),
  );
  const message = TransactionMessage.decompile(official.message);
  message.instructions.push(...extra);
  const tx = new VersionedTransaction(message.compileToV0Message(tables));
  expect(tx.message.addressTableLookups).toHaveLength(tables.length);
  tx.sign([payer]);
  return {
    ...payload,
    payload: { ...payload.payload, transaction: Buffer.from(tx.serialize()).toString('base64') },
  };
}

/** A memo naming `accounts` (read-only, not signers). */
function memoNaming(accounts: PublicKey[]): TransactionInstruction {
  return new TransactionInstruction({
    programId: MEMO,
    keys: accounts.map((pubkey) => ({ pubkey, isSigner: false, isWritable: false })),
    data: Buffer.from('x'),
  });
}

/** The payment's ledger key: the signature its transaction has once the fee payer co-signs it. */
function claimKey(payload: PaymentPayload): string {
  const tx = VersionedTransaction.deserialize(Buffer.from(String(payload.payload.transaction), 'base64'));
  tx.sign([h.ledger.feePayer.keypair]);
  return bs58.encode(tx.signatures[0] ?? new Uint8Array());
}

const lookupsFetched = (from: number) =>
  calls()
    .slice(from)
    .filter((method) => method === 'getMultipleAccounts').length;

describe('Paying with a transaction that uses an address lookup table', () => {
  it("When the transfer's source, mint and destination come from a table, then 200, the payment settles once with one extra RPC call, and a retry replays it", async () => {
    const payer = await wallet();
    const url = paidUrl();
    const table = await tableOf(transferAccounts(payer));
    const payload = withTables(await officialPayload(h, url, payer), payer, [table]);
    const before = await balances(h, 'solana', payer);
    const from = calls().length;

    const res = await sendPayment(url, payload);
    expect(res.status).toBe(200);
    const body = await res.text();
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    expect(settlement).toMatchObject({
      success: true,
      payer: payer.publicKey.toBase58(),
      transaction: claimKey(payload),
    });
    expect(await h.paymentRows(settlement.transaction)).toEqual([
      { status: 'completed', endpoint: `GET ${KEYWORDS}` },
    ]);
    expect(lookupsFetched(from)).toBe(1);

    const again = await sendPayment(url, payload);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(body);
    const after = await balances(h, 'solana', payer);
    expect(after.payerUsdc).toBe(before.payerUsdc - PRICE);
    expect(after.merchantUsdc).toBe(before.merchantUsdc + PRICE);
    expect(after.payerSol).toBe(before.payerSol);
    expect(lookupsFetched(from)).toBe(1);
  });

  it('When the official client pays without a table, then no lookup table is fetched', async () => {
    const payer = await wallet();
    const url = paidUrl();
    const payload = await officialPayload(h, url, payer);
    const from = calls().length;
    expect((await sendPayment(url, payload)).status).toBe(200);
    expect(calls().slice(from)).toContain('sendTransaction');
    expect(lookupsFetched(from)).toBe(0);
  });
});

describe('Refused transactions with address lookup tables', () => {
  /** What a case builds: the tables the transaction claims and extra instructions. */
  type Hostile = (
    payer: Keypair,
  ) => Promise<{ tables: AddressLookupTableAccount[]; extra?: TransactionInstruction[] }>;

  it.each<[string, Hostile, string, number]>([
    [
      "the fee payer, loaded from a table into a memo's accounts",
      async () => {
        const onChain = await tableOf([new PublicKey(h.ledger.feePayer.publicKey)]);
        const placeholder = Keypair.generate().publicKey;
        return { tables: [claimedTable(onChain.key, [placeholder])], extra: [memoNaming([placeholder])] };
      },
      'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
      1,
    ],
    [
      'a table that does not exist',
      async (payer) => ({ tables: [claimedTable(Keypair.generate().publicKey, transferAccounts(payer))] }),
      'invalid_exact_svm_smart_wallet_alt_resolution_failed',
      1,
    ],
    [
      'an index past the end of its table',
      async (payer) => {
        const accounts = transferAccounts(payer);
        const onChain = await tableOf(accounts.slice(0, 2));
        return { tables: [claimedTable(onChain.key, accounts)] };
      },
      'invalid_exact_svm_smart_wallet_alt_resolution_failed',
      1,
    ],
    [
      "a table that is another program's account (the mint)",
      async (payer) => ({
        tables: [claimedTable(new PublicKey(h.ledger.networks.solana.mint), transferAccounts(payer))],
      }),
      'invalid_exact_svm_smart_wallet_alt_resolution_failed',
      1,
    ],
    [
      'five tables, one more than accepted',
      async (payer) => {
        const others = [Keypair.generate().publicKey, Keypair.generate().publicKey];
        return {
          tables: [...transferAccounts(payer), ...others].map((address) =>
            claimedTable(Keypair.generate().publicKey, [address]),
          ),
          extra: [memoNaming(others)],
        };
      },
      'invalid_exact_svm_smart_wallet_alt_resolution_failed',
      0,
    ],
    [
      'a deactivated table',
      async (payer) => {
        const accounts = transferAccounts(payer);
        const { table, authority } = await createLookupTable({
          rpcUrl: h.rpcUrls.solana,
          addresses: accounts.map((a) => a.toBase58()),
        });
        await deactivateLookupTable({ rpcUrl: h.rpcUrls.solana, table, authority });
        return { tables: [claimedTable(new PublicKey(table), accounts)] };
      },
      'invalid_exact_svm_transaction_simulation_failed',
      1,
    ],
  ])(
    'When the transaction loads %s, then 402 with the reason, nothing is kept in the ledger and no balance moves',
    async (_what, hostile, reason, fetches) => {
      const payer = await wallet();
      const url = paidUrl();
      const { tables, extra } = await hostile(payer);
      const payload = withTables(await officialPayload(h, url, payer), payer, tables, extra);
      const before = await balances(h, 'solana', payer);
      const from = calls().length;

      const res = await sendPayment(url, payload);
      expect(res.status).toBe(402);
      expect(await res.json()).toMatchObject({ code: 'payment_required', details: { reason } });
      expect(lookupsFetched(from)).toBe(fetches);
      // The fee payer paid no fee either: the node sent nothing.
      expect(await balances(h, 'solana', payer)).toEqual(before);
      // Refused before anything could land: the claim is let go.
      expect(await h.paymentRows(claimKey(payload))).toEqual([]);
    },
  );
});
