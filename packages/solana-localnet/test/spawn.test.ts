import { randomInt } from 'node:crypto';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync } from '../src/deps';
import { sendUsdcTransfer, spawnLocalnet, type Localnet } from '../src/index';

describe('spawnLocalnet', () => {
  let ledger: Localnet;
  beforeAll(async () => {
    ledger = await spawnLocalnet();
  }, 60_000);
  afterAll(() => ledger.close());

  it('When started in a child process, then both networks answer with their own mint and merchant account', () => {
    expect(ledger.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ledger.networks.solana.rpcUrl).toBe(ledger.url);
    expect(ledger.networks['solana-devnet'].rpcUrl).toBe(`${ledger.url}/devnet`);
    expect(ledger.networks.solana.mint).not.toBe(ledger.networks['solana-devnet'].mint);
    expect(ledger.agent.keypair.publicKey.toBase58()).toBe(ledger.agent.publicKey);
  });

  it('When two equal transfers carry distinct priority fees, then both land with distinct signatures', async () => {
    const payer = Keypair.generate();
    await ledger.fund(payer.publicKey.toBase58(), { network: 'solana', usdcAtomic: 1_000_000n });
    const transfer = () =>
      sendUsdcTransfer({
        rpcUrl: ledger.networks.solana.rpcUrl,
        payer,
        mint: ledger.networks.solana.mint,
        destinationTokenAccount: ledger.networks.solana.merchantTokenAccount,
        amountAtomic: 100_000n,
        computeUnitPriceMicroLamports: randomInt(1, 2 ** 20),
      });
    const [a, b] = [await transfer(), await transfer()];
    expect(a).not.toBe(b);
    const balance = await new Connection(ledger.networks.solana.rpcUrl, 'confirmed').getTokenAccountBalance(
      getAssociatedTokenAddressSync(new PublicKey(ledger.networks.solana.mint), payer.publicKey),
    );
    expect(balance.value.amount).toBe('800000');
  });

  it('When closed, then the child process stops answering', async () => {
    const other = await spawnLocalnet();
    await other.close();
    await expect(fetch(other.url, { method: 'POST', body: '{}' })).rejects.toThrow();
  }, 60_000);
});
