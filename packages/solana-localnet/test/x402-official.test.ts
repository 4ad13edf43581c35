// The official x402 v2 exact SVM client and facilitator (@x402/svm on @solana/kit) against the ledger,
// as market-intel uses them. The ledger runs in a child process: the official client adds
// ComputeBudget and Memo instructions, and litesvm's x87 state must stay out of this process (see
// spawnLocalnet).
import {
  AddressLookupTableProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  Transaction,
} from '@solana/web3.js';
import {
  createKeyPairSignerFromBytes,
  createSolanaRpc,
  devnet,
  mainnet,
  signature as toSignature,
  type KeyPairSigner,
} from '@solana/kit';
import { toFacilitatorSvmSigner } from '@x402/svm';
import { ExactSvmScheme as ExactSvmClient } from '@x402/svm/exact/client';
import { ExactSvmScheme as ExactSvmFacilitator } from '@x402/svm/exact/facilitator';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { getAssociatedTokenAddressSync } from '../src/deps';
import { CAIP2_NETWORK, callRpc, spawnLocalnet, type Localnet, type LocalnetNetwork } from '../src/index';

const PRICE_ATOMIC = 100_000n;
// Two signatures (agent, fee payer) at 5000 lamports plus the official client's priority fee:
// 1 micro-lamport per CU for a 20 000 CU limit, rounded up to 1 lamport.
const OFFICIAL_PAYMENT_FEE = 10_001;

let ledger: Localnet;
let feePayerSigner: KeyPairSigner;

beforeAll(async () => {
  ledger = await spawnLocalnet();
  feePayerSigner = await createKeyPairSignerFromBytes(ledger.feePayer.keypair.secretKey);
}, 60_000);

afterAll(async () => {
  await ledger.close();
});

function rpcUrl(network: LocalnetNetwork): string {
  return ledger.networks[network].rpcUrl;
}

function requirementsFor(
  network: LocalnetNetwork,
  overrides: Partial<PaymentRequirements> = {},
): PaymentRequirements {
  return {
    scheme: 'exact',
    network: CAIP2_NETWORK[network] as PaymentRequirements['network'],
    amount: PRICE_ATOMIC.toString(),
    asset: ledger.networks[network].mint,
    payTo: ledger.networks[network].merchantOwner,
    maxTimeoutSeconds: 60,
    extra: { feePayer: ledger.feePayer.publicKey },
    ...overrides,
  };
}

/** The official facilitator, talking to each network's path of the ledger. */
function facilitator(signer: KeyPairSigner = feePayerSigner): ExactSvmFacilitator {
  return new ExactSvmFacilitator(
    toFacilitatorSvmSigner(signer, {
      [CAIP2_NETWORK.solana]: createSolanaRpc(mainnet(rpcUrl('solana'))),
      [CAIP2_NETWORK['solana-devnet']]: createSolanaRpc(devnet(rpcUrl('solana-devnet'))),
    }),
  );
}

/** A fresh agent with `usdcAtomic` test USDC and 1 SOL on `network`, and the official client for it. */
async function newAgent(network: LocalnetNetwork, usdcAtomic: bigint) {
  const keypair = Keypair.generate();
  await ledger.fund(keypair.publicKey.toBase58(), { network, usdcAtomic, lamports: LAMPORTS_PER_SOL });
  const signer = await createKeyPairSignerFromBytes(keypair.secretKey);
  return { keypair, client: new ExactSvmClient(signer, { rpcUrl: rpcUrl(network) }) };
}

async function pay(client: ExactSvmClient, requirements: PaymentRequirements): Promise<PaymentPayload> {
  const partial = await client.createPaymentPayload(2, requirements);
  return { ...partial, accepted: requirements };
}

/** What a payment moves: agent and merchant USDC (atomic units), agent and fee payer SOL (lamports). */
async function balances(network: LocalnetNetwork, agent: PublicKey) {
  const connection = new Connection(rpcUrl(network), 'confirmed');
  const mint = new PublicKey(ledger.networks[network].mint);
  const token = async (account: PublicKey) =>
    BigInt((await connection.getTokenAccountBalance(account)).value.amount);
  return {
    agentUsdc: await token(getAssociatedTokenAddressSync(mint, agent)),
    merchantUsdc: await token(new PublicKey(ledger.networks[network].merchantTokenAccount)),
    agentSol: await connection.getBalance(agent),
    feePayerSol: await connection.getBalance(new PublicKey(ledger.feePayer.publicKey)),
  };
}

describe('the official x402 exact SVM client and facilitator against the ledger', () => {
  it('When an agent pays with the official client and the official facilitator verifies and settles, then USDC moves to the merchant and the fee payer pays the fee', async () => {
    const { keypair, client } = await newAgent('solana-devnet', 1_000_000n);
    const requirements = requirementsFor('solana-devnet');
    const before = await balances('solana-devnet', keypair.publicKey);

    const payload = await pay(client, requirements);
    const scheme = facilitator();
    const verified = await scheme.verify(payload, requirements);
    expect(verified).toEqual(expect.objectContaining({ isValid: true, payer: keypair.publicKey.toBase58() }));
    const settled = await scheme.settle(payload, requirements);
    expect(settled).toEqual(
      expect.objectContaining({
        success: true,
        network: CAIP2_NETWORK['solana-devnet'],
        payer: keypair.publicKey.toBase58(),
      }),
    );

    const after = await balances('solana-devnet', keypair.publicKey);
    expect(after.agentUsdc - before.agentUsdc).toBe(-PRICE_ATOMIC);
    expect(after.merchantUsdc - before.merchantUsdc).toBe(PRICE_ATOMIC);
    expect(after.agentSol).toBe(before.agentSol);
    expect(before.feePayerSol - after.feePayerSol).toBe(OFFICIAL_PAYMENT_FEE);

    const rpc = createSolanaRpc(devnet(rpcUrl('solana-devnet')));
    const tx = await rpc
      .getTransaction(toSignature(settled.transaction), {
        commitment: 'confirmed',
        encoding: 'jsonParsed',
        maxSupportedTransactionVersion: 0,
      })
      .send();
    // kit reads every JSON number as a bigint unless it knows the path as small, version included.
    expect(String(tx?.version)).toBe('0');
    expect(tx?.meta?.err).toBeNull();
    expect(tx?.meta?.fee).toBe(BigInt(OFFICIAL_PAYMENT_FEE));
    expect(tx?.transaction.message.accountKeys[0]).toEqual(
      expect.objectContaining({ pubkey: ledger.feePayer.publicKey, signer: true, writable: true }),
    );
    const instructions = tx?.transaction.message.instructions ?? [];
    const transfer = instructions.find((ix) => 'parsed' in ix && ix.program === 'spl-token');
    expect(transfer).toEqual(
      expect.objectContaining({
        programId: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
        parsed: expect.objectContaining({
          type: 'transferChecked',
          info: expect.objectContaining({
            authority: keypair.publicKey.toBase58(),
            destination: ledger.networks['solana-devnet'].merchantTokenAccount,
            mint: ledger.networks['solana-devnet'].mint,
            tokenAmount: expect.objectContaining({ amount: PRICE_ATOMIC.toString(), decimals: 6n }),
          }),
        }),
      }),
    );
    expect(instructions).toContainEqual(
      expect.objectContaining({ program: 'spl-memo', parsed: expect.any(String) }),
    );
  });

  it('When the requirements name the mainnet CAIP-2 id, then the payment settles on the solana path and not on /devnet', async () => {
    const { keypair, client } = await newAgent('solana', 1_000_000n);
    const requirements = requirementsFor('solana');
    const before = await balances('solana', keypair.publicKey);
    const payload = await pay(client, requirements);
    const settled = await facilitator().settle(payload, requirements);
    expect(settled.success).toBe(true);
    const after = await balances('solana', keypair.publicKey);
    expect(after.merchantUsdc - before.merchantUsdc).toBe(PRICE_ATOMIC);
    const status = (signatureNetwork: LocalnetNetwork) =>
      callRpc<{ value: unknown[] }>(rpcUrl(signatureNetwork), 'getSignatureStatuses', [
        [settled.transaction],
      ]);
    expect((await status('solana')).value[0]).toEqual(expect.objectContaining({ err: null }));
    expect((await status('solana-devnet')).value[0]).toBeNull();
  });

  it('When the payment blockhash has expired, then the facilitator refuses it on the ledger BlockhashNotFound and nothing moves', async () => {
    const { keypair, client } = await newAgent('solana-devnet', 1_000_000n);
    const requirements = requirementsFor('solana-devnet');
    const payload = await pay(client, requirements);
    await callRpc(rpcUrl('solana-devnet'), 'localnet_expireBlockhashes');
    const before = await balances('solana-devnet', keypair.publicKey);

    const scheme = facilitator();
    const verified = await scheme.verify(payload, requirements);
    expect(verified).toEqual(
      expect.objectContaining({
        isValid: false,
        invalidReason: 'invalid_exact_svm_transaction_simulation_failed',
        invalidMessage: 'Simulation failed: "BlockhashNotFound"',
      }),
    );
    const settled = await scheme.settle(payload, requirements);
    expect(settled).toEqual(
      expect.objectContaining({
        success: false,
        errorReason: 'invalid_exact_svm_transaction_simulation_failed',
      }),
    );
    expect(await balances('solana-devnet', keypair.publicKey)).toEqual(before);
  });

  it('When the agent holds less USDC than the price, then the facilitator refuses it on the token program error and nothing moves', async () => {
    const { keypair, client } = await newAgent('solana-devnet', PRICE_ATOMIC / 2n);
    const requirements = requirementsFor('solana-devnet');
    const payload = await pay(client, requirements);
    const before = await balances('solana-devnet', keypair.publicKey);

    const scheme = facilitator();
    const verified = await scheme.verify(payload, requirements);
    expect(verified).toEqual(
      expect.objectContaining({
        isValid: false,
        invalidReason: 'invalid_exact_svm_transaction_simulation_failed',
        // SPL Token error 1 (insufficient funds) in the transferChecked, instruction 2; kit reads the
        // numbers as bigints and the facilitator writes them as strings.
        invalidMessage: 'Simulation failed: {"InstructionError":["2",{"Custom":"1"}]}',
      }),
    );
    expect((await scheme.settle(payload, requirements)).success).toBe(false);
    expect(await balances('solana-devnet', keypair.publicKey)).toEqual(before);
  });

  it('When a settled payment is presented to another facilitator instance, then the ledger answers AlreadyProcessed and nothing moves again', async () => {
    const { keypair, client } = await newAgent('solana-devnet', 1_000_000n);
    const requirements = requirementsFor('solana-devnet');
    const payload = await pay(client, requirements);
    expect((await facilitator().settle(payload, requirements)).success).toBe(true);
    const before = await balances('solana-devnet', keypair.publicKey);

    // A second replica has its own settlement cache: only the ledger's status cache stops the replay.
    const replica = facilitator();
    expect(await replica.verify(payload, requirements)).toEqual(
      expect.objectContaining({
        isValid: false,
        invalidReason: 'invalid_exact_svm_transaction_simulation_failed',
        invalidMessage: 'Simulation failed: "AlreadyProcessed"',
      }),
    );
    expect((await replica.settle(payload, requirements)).success).toBe(false);
    expect(await balances('solana-devnet', keypair.publicKey)).toEqual(before);
  });

  it('When the fee payer has no SOL, then the facilitator refuses the payment on the ledger AccountNotFound and nothing moves', async () => {
    const { keypair, client } = await newAgent('solana-devnet', 1_000_000n);
    const unfunded = await createKeyPairSignerFromBytes(Keypair.generate().secretKey);
    const requirements = requirementsFor('solana-devnet', { extra: { feePayer: unfunded.address } });
    const payload = await pay(client, requirements);
    const before = await balances('solana-devnet', keypair.publicKey);

    const verified = await facilitator(unfunded).verify(payload, requirements);
    expect(verified).toEqual(
      expect.objectContaining({
        isValid: false,
        invalidReason: 'invalid_exact_svm_transaction_simulation_failed',
        invalidMessage: 'Simulation failed: "AccountNotFound"',
      }),
    );
    expect(await balances('solana-devnet', keypair.publicKey)).toEqual(before);
  });

  it('When the official signer resolves an address lookup table, then the ledger answers the jsonParsed table', async () => {
    // The facilitator resolves lookup tables (kit's fetchAddressesForLookupTables) before verifying a
    // v0 transaction that uses them. The table is created with the ledger's only recent slot, 0.
    const connection = new Connection(rpcUrl('solana-devnet'), 'confirmed');
    const authority = Keypair.generate();
    await ledger.fund(authority.publicKey.toBase58(), { network: 'solana-devnet', usdcAtomic: 0n });
    const [create, table] = AddressLookupTableProgram.createLookupTable({
      authority: authority.publicKey,
      payer: authority.publicKey,
      recentSlot: 0,
    });
    const entries = [Keypair.generate().publicKey, Keypair.generate().publicKey];
    const extend = AddressLookupTableProgram.extendLookupTable({
      lookupTable: table,
      authority: authority.publicKey,
      payer: authority.publicKey,
      addresses: entries,
    });
    const { blockhash } = await connection.getLatestBlockhash();
    const tx = new Transaction({ feePayer: authority.publicKey, blockhash, lastValidBlockHeight: 0 }).add(
      create,
      extend,
    );
    tx.sign(authority);
    await connection.sendRawTransaction(tx.serialize());

    const signer = toFacilitatorSvmSigner(feePayerSigner, {
      [CAIP2_NETWORK['solana-devnet']]: createSolanaRpc(devnet(rpcUrl('solana-devnet'))),
    });
    const resolved = await signer.fetchAddressLookupTables?.(
      [table.toBase58()],
      CAIP2_NETWORK['solana-devnet'],
    );
    expect(resolved).toEqual({ [table.toBase58()]: entries.map((k) => k.toBase58()) });
  });
});
