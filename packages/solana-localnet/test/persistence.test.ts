import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, PublicKey } from '@solana/web3.js';
import { sendUsdcTransfer, startLocalnet } from '../src/index';

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
});
