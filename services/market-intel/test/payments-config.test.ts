import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { ConfigError } from '@repo/service-kit';
import { associatedTokenAccountOf } from '@repo/x402-solana';
import { loadConfig } from '../src/config';
import { createRefundSenders, createSettlers } from '../src/adapters/x402';

// The official-scheme configuration (README, "Configuration"): a fee payer file and the merchant
// wallets, checked at boot.
const dir = mkdtempSync(path.join(os.tmpdir(), 'fee-payer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mint = Keypair.generate().publicKey.toBase58();
const merchant = Keypair.generate().publicKey.toBase58();
const feePayer = Keypair.generate();
const keypairPath = path.join(dir, 'fee-payer.json');
writeFileSync(keypairPath, JSON.stringify(Array.from(feePayer.secretKey)));

function config(overrides: Record<string, string> = {}) {
  return loadConfig({
    DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/market_intel',
    USDC_MINT: mint,
    MERCHANT_TOKEN_ACCOUNT: associatedTokenAccountOf(merchant, mint),
    MERCHANT_WALLET: merchant,
    X402_FEE_PAYER_KEYPAIR: keypairPath,
    ...overrides,
  });
}

describe('createSettlers', () => {
  it('When the fee payer file and the merchant wallet are set, then the main network offers the official scheme with that fee payer', () => {
    const settlers = createSettlers(config());
    expect(Object.keys(settlers)).toEqual(['solana']);
    expect(settlers.solana?.requirements(100_000n, 60)).toEqual({
      scheme: 'exact',
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      amount: '100000',
      asset: mint,
      payTo: merchant,
      maxTimeoutSeconds: 60,
      extra: { feePayer: feePayer.publicKey.toBase58() },
    });
  });

  it('When no fee payer is configured, then no network offers it (push mode only)', () => {
    const { X402_FEE_PAYER_KEYPAIR: _unset, ...rest } = config();
    expect(createSettlers({ ...rest, X402_FEE_PAYER_KEYPAIR: undefined })).toEqual({});
  });

  it('When the merchant wallet does not own the merchant token account, then boot fails naming both variables', () => {
    expect(() =>
      createSettlers(config({ MERCHANT_WALLET: Keypair.generate().publicKey.toBase58() })),
    ).toThrow(
      /MERCHANT_WALLET: its associated token account for USDC_MINT is \w+, not MERCHANT_TOKEN_ACCOUNT/,
    );
  });

  it.each([
    ['missing', path.join(dir, 'nowhere.json'), /X402_FEE_PAYER_KEYPAIR: ENOENT/],
    [
      'not a keypair',
      path.join(dir, 'short.json'),
      /X402_FEE_PAYER_KEYPAIR: a keypair file must hold a JSON array of 64 bytes/,
    ],
  ])(
    'When the fee payer file is %s, then boot fails naming X402_FEE_PAYER_KEYPAIR',
    (_what, file, message) => {
      writeFileSync(path.join(dir, 'short.json'), '[1,2,3]');
      expect(() => createSettlers(config({ X402_FEE_PAYER_KEYPAIR: file }))).toThrow(message);
    },
  );
});

describe('createRefundSenders', () => {
  const refundPath = path.join(dir, 'refund.json');
  const refundWallet = Keypair.generate();
  writeFileSync(refundPath, JSON.stringify(Array.from(refundWallet.secretKey)));

  it('When a refund wallet is configured, then each network payments are taken on refunds from it', () => {
    const devnetMint = Keypair.generate().publicKey.toBase58();
    const senders = createRefundSenders(
      config({
        X402_REFUND_KEYPAIR: refundPath,
        USDC_MINT_DEVNET: devnetMint,
        MERCHANT_TOKEN_ACCOUNT_DEVNET: associatedTokenAccountOf(merchant, devnetMint),
      }),
    );
    expect(Object.keys(senders).sort()).toEqual(['solana', 'solana-devnet']);
    expect(senders.solana?.wallet).toBe(refundWallet.publicKey.toBase58());
  });

  it('When no refund wallet is configured, then refunds are off', () => {
    expect(createRefundSenders(config())).toEqual({});
  });

  it('When the refund wallet is the fee payer or not a keypair, then boot fails naming X402_REFUND_KEYPAIR', () => {
    expect(() => createRefundSenders(config({ X402_REFUND_KEYPAIR: keypairPath }))).toThrow(
      /X402_REFUND_KEYPAIR: the refund wallet must not be the x402 fee payer/,
    );
    writeFileSync(path.join(dir, 'short.json'), '[1,2,3]');
    expect(() => createRefundSenders(config({ X402_REFUND_KEYPAIR: path.join(dir, 'short.json') }))).toThrow(
      /X402_REFUND_KEYPAIR: a keypair file must hold a JSON array of 64 bytes/,
    );
  });
});

describe('payment configuration errors', () => {
  // Every refused configuration is a ConfigError, so a boot prints them all the same way.
  function thrown(build: () => unknown): ConfigError {
    try {
      build();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return error as ConfigError;
    }
    throw new Error('expected the configuration to be refused');
  }

  it('When a check of the payment configuration fails, then it throws a ConfigError with one problem naming the variable', () => {
    const wallet = thrown(() =>
      createSettlers(config({ MERCHANT_WALLET: Keypair.generate().publicKey.toBase58() })),
    );
    expect(wallet.problems).toEqual([
      expect.stringMatching(/^MERCHANT_WALLET: its associated token account/),
    ]);
    expect(wallet.message).toMatch(/^Invalid configuration:\n {2}MERCHANT_WALLET: /);

    const missing = thrown(() =>
      createSettlers(config({ X402_FEE_PAYER_KEYPAIR: path.join(dir, 'nowhere.json') })),
    );
    expect(missing.problems).toEqual([expect.stringMatching(/^X402_FEE_PAYER_KEYPAIR: ENOENT/)]);
    expect(missing.cause).toMatchObject({ code: 'ENOENT' });

    const refund = thrown(() => createRefundSenders(config({ X402_REFUND_KEYPAIR: keypairPath })));
    expect(refund.problems).toEqual([
      expect.stringMatching(/^X402_REFUND_KEYPAIR: the refund wallet must not be the x402 fee payer/),
    ]);
  });
});
