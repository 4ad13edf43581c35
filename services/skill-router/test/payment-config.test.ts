import { configRefusal } from '@repo/service-kit/testing';
import { loadConfig } from '../src/config';

// The Solana settings that check paid call reports (README, "Configuration" and "Reputation").
const refusal = (env: NodeJS.ProcessEnv) => configRefusal(loadConfig, env);
const MINT = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';
const remote = { DATABASE_URL: 'postgresql://svc:pw@db.internal:5432/x' };

describe('skill-router payment proof settings', () => {
  it('When an RPC URL is set without its USDC mint, or a mint without its RPC URL, then it refuses to boot naming each pair', () => {
    expect(
      refusal({ ...remote, SOLANA_RPC_URL: 'https://rpc.example.com', USDC_MINT_DEVNET: MINT }).problems,
    ).toEqual([
      'SOLANA_RPC_URL and USDC_MINT must be set together',
      'SOLANA_DEVNET_RPC_URL and USDC_MINT_DEVNET must be set together',
    ]);
  });

  it('When a mint is not a 32-byte base58 address, then it refuses to boot naming it', () => {
    const problems = refusal({
      ...remote,
      SOLANA_RPC_URL: 'https://rpc.example.com',
      USDC_MINT: 'not-a-mint',
    }).problems;
    expect(problems.join('\n')).toMatch(/USDC_MINT/);
  });

  it('When production points a Solana RPC URL at this machine, then it refuses to boot naming it', () => {
    expect(
      refusal({
        ...remote,
        NODE_ENV: 'production',
        SOLANA_DEVNET_RPC_URL: 'http://127.0.0.1:8899/devnet',
        USDC_MINT_DEVNET: MINT,
      }).problems,
    ).toEqual(['SOLANA_DEVNET_RPC_URL: points at 127.0.0.1, a loopback address, in production']);
  });

  it('When both networks are configured in pairs, or none, then it boots; the defaults are a day and 60 proofs an hour', () => {
    const config = loadConfig({
      ...remote,
      NODE_ENV: 'production',
      SOLANA_RPC_URL: 'https://rpc.example.com',
      USDC_MINT: MINT,
      SOLANA_DEVNET_RPC_URL: 'https://devnet.example.com',
      USDC_MINT_DEVNET: MINT,
    });
    expect(config).toMatchObject({
      PAYMENT_PROOF_MAX_AGE_SECONDS: 86_400,
      PAYMENT_PROOFS_PER_KEY_PER_HOUR: 60,
    });
    expect(loadConfig({ ...remote, SOLANA_RPC_URL: '', USDC_MINT: '' }).SOLANA_RPC_URL).toBeUndefined();
  });
});
