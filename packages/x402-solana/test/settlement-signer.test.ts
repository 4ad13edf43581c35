import { Connection, Keypair, LAMPORTS_PER_SOL, SystemProgram, Transaction } from '@solana/web3.js';
import { TransactionOnchainFailureError } from '@x402/svm';
import { spawnLocalnet, bs58, waitForSignature, type Localnet } from '@repo/solana-localnet';
import { RpcTransportError, SignatureStatusPoller } from '../src/index';
import { SolanaRpcClient } from '../src/rpc-client';
import { proxyTo } from './support/stub-rpc';

jest.setTimeout(30_000);

let localnet: Localnet;
let rpcUrl: string;

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  rpcUrl = localnet.networks['solana-devnet'].rpcUrl;
});

afterAll(async () => {
  await localnet?.close();
});

const proxyToLedger = () => proxyTo(rpcUrl);

describe('Confirming settlements with one status call for all of them', () => {
  it('When twelve transactions wait at once, then one getSignatureStatuses call confirms all twelve with their slots', async () => {
    const connection = new Connection(rpcUrl, 'confirmed');
    const signatures = await Promise.all(
      Array.from({ length: 12 }, () =>
        connection.requestAirdrop(Keypair.generate().publicKey, LAMPORTS_PER_SOL),
      ),
    );
    const proxy = await proxyToLedger();
    const client = new SolanaRpcClient(proxy.url);
    try {
      const poller = new SignatureStatusPoller(client);
      const statuses = await Promise.all(signatures.map((signature) => poller.confirm(signature)));
      const calls = proxy.requests.filter((request) => request.method === 'getSignatureStatuses');
      expect(calls).toEqual([expect.objectContaining({ params: [signatures] })]);
      for (const [i, status] of statuses.entries()) {
        const landed = await connection.getTransaction(signatures[i] ?? '', {
          maxSupportedTransactionVersion: 0,
        });
        expect(status).toMatchObject({ slot: landed?.slot, err: null });
      }
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  it('When a transaction landed and failed, then TransactionOnchainFailureError (terminal)', async () => {
    const connection = new Connection(rpcUrl, 'confirmed');
    const payer = Keypair.generate();
    await waitForSignature(connection, await connection.requestAirdrop(payer.publicKey, LAMPORTS_PER_SOL));
    const { blockhash } = await connection.getLatestBlockhash();
    const overdraw = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
      SystemProgram.transfer({
        fromPubkey: payer.publicKey,
        toPubkey: Keypair.generate().publicKey,
        lamports: 50 * LAMPORTS_PER_SOL,
      }),
    );
    overdraw.sign(payer);
    const signature = await connection.sendRawTransaction(overdraw.serialize(), { skipPreflight: true });
    const client = new SolanaRpcClient(rpcUrl);
    try {
      await expect(new SignatureStatusPoller(client).confirm(signature)).rejects.toBeInstanceOf(
        TransactionOnchainFailureError,
      );
    } finally {
      await client.close();
    }
  });

  it('When a signature never lands, then it is asked about again each interval and times out (not terminal)', async () => {
    const proxy = await proxyToLedger();
    const client = new SolanaRpcClient(proxy.url);
    try {
      const unknown = bs58.encode(Keypair.generate().secretKey);
      // Room for several polls even when a loaded machine stretches each round trip.
      const poller = new SignatureStatusPoller(client, { pollIntervalMs: 20, timeoutMs: 2_000 });
      const error = await poller.confirm(unknown).catch((caught: unknown) => caught);
      expect(error).toEqual(new Error('Transaction confirmation timeout'));
      expect(error).not.toBeInstanceOf(TransactionOnchainFailureError);
      expect(
        proxy.requests.filter((request) => request.method === 'getSignatureStatuses').length,
      ).toBeGreaterThan(2);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  it('When the RPC cannot be reached, then every waiting signature fails with the transport error', async () => {
    const client = new SolanaRpcClient('http://127.0.0.1:9/', { timeoutMs: 1_000 });
    try {
      const poller = new SignatureStatusPoller(client);
      const results = await Promise.allSettled(
        [Keypair.generate(), Keypair.generate()].map((key) => poller.confirm(bs58.encode(key.secretKey))),
      );
      expect(
        results.map((result) => result.status === 'rejected' && result.reason instanceof RpcTransportError),
      ).toEqual([true, true]);
    } finally {
      await client.close();
    }
  });
});
