import { z } from 'zod';
import { BaseHttpEnv, intVar, parseConfig } from '@repo/service-kit';

const base58 = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 Solana address');

/**
 * market-intel's environment (README, "Configuration"). Parsed once at boot; every bad variable is
 * named. Secrets and on-chain addresses have no defaults.
 */
export const MarketIntelEnv = z.object({
  ...BaseHttpEnv,
  PORT: intVar(3001, 0, 65535),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL'),
  DATABASE_POOL_SIZE: intVar(10, 1, 200),
  /** Public origin used in PaymentRequirements.resource, e.g. https://api.example.com; else from the request. */
  PUBLIC_BASE_URL: z.url().optional(),
  SOLANA_RPC_URL: z.url().default('http://127.0.0.1:8899'),
  USDC_MINT: base58,
  MERCHANT_TOKEN_ACCOUNT: base58,
  SOLANA_DEVNET_RPC_URL: z.url().default('http://127.0.0.1:8899/devnet'),
  USDC_MINT_DEVNET: base58.optional(),
  MERCHANT_TOKEN_ACCOUNT_DEVNET: base58.optional(),
  /** Seconds a payment transaction stays acceptable after its block time. */
  PAYMENT_FRESHNESS_SECONDS: intVar(600, 10, 86_400),
  /** maxTimeoutSeconds advertised in PaymentRequirements (the spec's example: 60). */
  PAYMENT_MAX_TIMEOUT_SECONDS: intVar(60, 1, 3600),
});

/** The parsed configuration. */
export type MarketIntelConfig = z.infer<typeof MarketIntelEnv>;

/**
 * Reads the configuration from the environment.
 * @throws ConfigError naming every invalid or missing variable
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): MarketIntelConfig {
  const config = parseConfig(MarketIntelEnv, env);
  if (Boolean(config.USDC_MINT_DEVNET) !== Boolean(config.MERCHANT_TOKEN_ACCOUNT_DEVNET)) {
    throw new Error('Invalid configuration:\n  USDC_MINT_DEVNET and MERCHANT_TOKEN_ACCOUNT_DEVNET must be set together');
  }
  return config;
}
