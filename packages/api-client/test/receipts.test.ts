import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import {
  createPayer,
  directoryReceiptStore,
  marketIntelClient,
  ReceiptCheckError,
  receiptOf,
  verifyReceiptFile,
  type ReceiptFile,
} from '../src/index';
import { startContractServer, type ContractServer } from './support/contract-server';

// Receipts as evidence (README): the payer checks each paid answer's signed receipt (x402
// offer-receipt) against the server's /.well-known/jwks.json, the body and the payment, and keeps it.
// Against the contract server (the project's x402 middleware, PostgreSQL ledger, local Solana ledger).
jest.setTimeout(60_000);

let server: ContractServer;
const dir = mkdtempSync(join(tmpdir(), 'api-client-receipts-'));

beforeAll(async () => {
  server = await startContractServer();
});
afterAll(() => server?.close());

async function wallet(): Promise<string> {
  const keypair = Keypair.generate();
  await server.localnet.fund(keypair.publicKey.toBase58(), { usdcAtomic: 5_000_000n });
  const file = join(dir, `${keypair.publicKey.toBase58()}.json`);
  writeFileSync(file, JSON.stringify([...keypair.secretKey]));
  return file;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ReceiptCheckError) return error.code;
    throw error;
  }
  return 'verified';
}

describe('Receipts as evidence', () => {
  it('When a paid answer carries a receipt, then it is verified, kept with its body, and checks again offline; an altered body does not', async () => {
    const store = join(dir, 'kept');
    for (const mode of ['official', 'push'] as const) {
      const payer = createPayer({
        signer: await wallet(),
        rpcUrls: { solana: server.localnet.networks.solana.rpcUrl },
        receiptStore: directoryReceiptStore(store),
        mode,
      });
      const { data, response } = await marketIntelClient(server.baseUrl, payer).GET('/api/v1/scout/keywords');
      expect(data?.keywords).toHaveLength(1);
      const receipt = receiptOf(response)!;
      expect(receipt.scheme).toBe(mode);
      expect(receipt.evidence).toMatchObject({
        status: 'verified',
        stored: true,
        claims: { transaction: receipt.signature, payer: receipt.payer, amount: '50000' },
      });
      const file = join(store, `${receipt.signature}.json`);
      const kept = JSON.parse(readFileSync(file, 'utf8')) as ReceiptFile;
      expect(kept).toMatchObject({
        kind: 'x402-offer-receipt',
        status: 'verified',
        signature: receipt.signature,
      });
      const body = readFileSync(join(store, kept.bodyFile));
      expect((await verifyReceiptFile(file, { body })).claims.transaction).toBe(receipt.signature);
      expect(await codeOf(verifyReceiptFile(file, { body: Buffer.from(`${body.toString()} `) }))).toBe(
        'body_mismatch',
      );
    }
  });

  it('When the server signs with a key it does not publish, then the receipt is kept as invalid and the paid answer still comes back', async () => {
    const payer = createPayer({
      signer: await wallet(),
      rpcUrls: { solana: server.localnet.networks.solana.rpcUrl },
    });
    const response = await payer.fetch(`${server.baseUrl}/rogue/keywords`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ keywords: [] });
    expect(receiptOf(response)?.evidence).toMatchObject({ status: 'invalid', problem: 'unknown_key' });
  });

  it('When verifyReceipts is false, then no receipt is checked', async () => {
    const payer = createPayer({
      signer: await wallet(),
      rpcUrls: { solana: server.localnet.networks.solana.rpcUrl },
      verifyReceipts: false,
    });
    const response = await payer.fetch(`${server.baseUrl}/api/v1/scout/keywords`);
    expect(response.status).toBe(200);
    expect(receiptOf(response)?.evidence).toBeUndefined();
  });
});
