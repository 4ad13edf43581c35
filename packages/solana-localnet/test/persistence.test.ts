import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SystemProgram,
  Transaction,
} from '@solana/web3.js';
import { sendUsdcTransfer, startLocalnet, waitForSignature } from '../src/index';

describe('persistence', () => {
  let dataDir: string;

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'localnet-persist-'));
  });

  afterEach(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('When the ledger restarts on the same data directory, then addresses, balances and old transactions survive', async () => {
    const first = await startLocalnet({ port: 0, dataDir, agentUsdcAtomic: 50_000_000n });
    const signature = await sendUsdcTransfer({
      rpcUrl: first.networks.solana.rpcUrl,
      payer: first.agent.keypair,
      mint: first.networks.solana.mint,
      destinationTokenAccount: first.networks.solana.merchantTokenAccount,
      amountAtomic: 1_250_000n,
    });
    const before = new Connection(first.networks.solana.rpcUrl, 'confirmed');
    const merchant = new PublicKey(first.networks.solana.merchantTokenAccount);
    const slotBefore = await before.getSlot();
    expect((await before.getTokenAccountBalance(merchant)).value.amount).toBe('1250000');
    await first.close();

    const keypairFile: unknown = JSON.parse(fs.readFileSync(first.agent.keypairPath, 'utf8'));
    expect(Array.isArray(keypairFile) && keypairFile.length === 64).toBe(true);
    const addresses = JSON.parse(fs.readFileSync(path.join(dataDir, 'addresses.json'), 'utf8')) as {
      networks: Record<string, { mint: string; merchantTokenAccount: string }>;
      agent: { publicKey: string; keypairPath: string };
    };
    expect(addresses.networks.solana?.mint).toBe(first.networks.solana.mint);
    expect(addresses.networks['solana-devnet']?.merchantTokenAccount).toBe(
      first.networks['solana-devnet'].merchantTokenAccount,
    );
    expect(addresses.agent).toEqual({
      publicKey: first.agent.publicKey,
      keypairPath: first.agent.keypairPath,
    });

    const second = await startLocalnet({ port: 0, dataDir, agentUsdcAtomic: 50_000_000n });
    try {
      expect(second.networks).toEqual(
        Object.fromEntries(
          Object.entries(first.networks).map(([n, info]) => [n, { ...info, rpcUrl: expect.any(String) }]),
        ),
      );
      expect(second.agent.publicKey).toBe(first.agent.publicKey);
      const after = new Connection(second.networks.solana.rpcUrl, 'confirmed');
      expect((await after.getTokenAccountBalance(merchant)).value.amount).toBe('1250000');
      const tx = await after.getTransaction(signature, {
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
      });
      expect(tx?.meta?.err).toBeNull();
      const status = await after.getSignatureStatuses([signature]);
      expect(status.value[0]?.confirmationStatus).toBe('finalized');
      expect(await after.getSlot()).toBeGreaterThanOrEqual(slotBefore);
      // The agent is not funded a second time.
      const again = await sendUsdcTransfer({
        rpcUrl: second.networks.solana.rpcUrl,
        payer: second.agent.keypair,
        mint: second.networks.solana.mint,
        destinationTokenAccount: second.networks.solana.merchantTokenAccount,
        amountAtomic: 1n,
      });
      const againTx = await after.getTransaction(again, { maxSupportedTransactionVersion: 0 });
      const agentPre = againTx?.meta?.preTokenBalances?.find((b) => b.owner === second.agent.publicKey);
      expect(agentPre?.uiTokenAmount.amount).toBe('48750000');
      expect(againTx?.slot).toBeGreaterThan(tx?.slot ?? 0);
    } finally {
      await second.close();
    }
  });

  it('When the fee payer has spent below 10 SOL and the ledger restarts, then it is the same keypair, topped up to 100 SOL on that network only', async () => {
    const first = await startLocalnet({ port: 0, dataDir });
    const feePayer = first.feePayer.keypair;
    expect(first.feePayer.keypairPath).toBe(path.join(dataDir, 'keys', 'fee-payer.json'));
    const connection = new Connection(first.networks.solana.rpcUrl, 'confirmed');
    const { blockhash } = await connection.getLatestBlockhash();
    const spend = new Transaction({ feePayer: feePayer.publicKey, blockhash, lastValidBlockHeight: 0 }).add(
      SystemProgram.transfer({
        fromPubkey: feePayer.publicKey,
        toPubkey: Keypair.generate().publicKey,
        lamports: 95 * LAMPORTS_PER_SOL,
      }),
    );
    spend.sign(feePayer);
    await waitForSignature(connection, await connection.sendRawTransaction(spend.serialize()));
    expect(await connection.getBalance(feePayer.publicKey)).toBe(5 * LAMPORTS_PER_SOL - 5000);
    const devnetCount = await new Connection(first.networks['solana-devnet'].rpcUrl).getTransactionCount();
    await first.close();
    const addresses = JSON.parse(fs.readFileSync(path.join(dataDir, 'addresses.json'), 'utf8')) as {
      feePayer: { publicKey: string; keypairPath: string };
    };
    expect(addresses.feePayer).toEqual({
      publicKey: first.feePayer.publicKey,
      keypairPath: first.feePayer.keypairPath,
    });

    const second = await startLocalnet({ port: 0, dataDir });
    try {
      expect(second.feePayer.publicKey).toBe(first.feePayer.publicKey);
      const after = new Connection(second.networks.solana.rpcUrl, 'confirmed');
      expect(await after.getBalance(feePayer.publicKey)).toBe(100 * LAMPORTS_PER_SOL);
      const devnet = new Connection(second.networks['solana-devnet'].rpcUrl, 'confirmed');
      expect(await devnet.getBalance(feePayer.publicKey)).toBe(100 * LAMPORTS_PER_SOL);
      // Devnet's fee payer still had 100 SOL: no refill transaction there.
      expect(await devnet.getTransactionCount()).toBe(devnetCount);
    } finally {
      await second.close();
    }
  });
});
