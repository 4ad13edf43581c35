import { randomBytes } from 'node:crypto';
import { configRefusal } from '@repo/service-kit/testing';
import { loadConfig } from '../src/config';

// The webhook secret rules of the configuration (README, "Webhooks (market-intel)"): production refuses
// a secret a receiver could not rely on; development keeps accepting what it accepted before.
function buildEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/market_intel',
    USDC_MINT: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    MERCHANT_TOKEN_ACCOUNT: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
    ...overrides,
  };
}

/** A production environment with nothing insecure but what `overrides` sets. */
function productionEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return buildEnv({
    NODE_ENV: 'production',
    DATABASE_URL: 'postgresql://market_intel:pw@postgres.internal:5432/market_intel',
    AMQP_URL: 'amqps://agents:a-broker-password@rabbitmq.internal:5671',
    SOLANA_RPC_URL: 'https://api.mainnet-beta.solana.com',
    ...overrides,
  });
}

const refusal = (env: NodeJS.ProcessEnv) => configRefusal(loadConfig, env);

describe('WEBHOOK_SECRET in production', () => {
  it('When the secret is shorter than 32 bytes, then the service refuses to boot with an error naming WEBHOOK_SECRET and not echoing it', () => {
    const secret = 'a-31-byte-webhook-secret-xxxxxx';
    expect(Buffer.byteLength(secret)).toBe(31);
    const error = refusal(productionEnv({ WEBHOOK_SECRET: secret }));
    expect(error.problems).toEqual([expect.stringMatching(/^WEBHOOK_SECRET: must be at least 32 bytes/)]);
    expect(error.message).not.toContain(secret);
  });

  it('When the secret still holds the template placeholder, then the service refuses to boot although it is long enough', () => {
    const secret = 'CHANGE_ME_32_or_more_random_bytes_printable_ASCII_e.g._openssl_rand_-base64_32';
    const error = refusal(productionEnv({ WEBHOOK_SECRET: secret }));
    expect(error.problems).toEqual([expect.stringMatching(/^WEBHOOK_SECRET: .*CHANGE_ME placeholder/)]);
    expect(error.message).not.toContain(secret);
  });

  it('When the secret is short and a placeholder, then both problems are named at once', () => {
    const error = refusal(productionEnv({ WEBHOOK_SECRET: 'CHANGE_ME_webhook_secret' }));
    expect(error.problems).toHaveLength(2);
    for (const problem of error.problems) expect(problem).toMatch(/^WEBHOOK_SECRET: /);
  });

  it('When the secret is 32 random bytes (base64), then production boots with it', () => {
    const secret = randomBytes(32).toString('base64');
    const config = loadConfig(productionEnv({ WEBHOOK_SECRET: secret }));
    expect(config.WEBHOOK_SECRET).toBe(secret);
  });

  it('When production has no secret, then it boots with webhooks off', () => {
    expect(loadConfig(productionEnv()).WEBHOOK_SECRET).toBeUndefined();
  });
});

describe('WEBHOOK_SECRET in development', () => {
  it('When no secret is set, then the service boots with webhooks off, as before', () => {
    expect(loadConfig(buildEnv()).WEBHOOK_SECRET).toBeUndefined();
    expect(loadConfig(buildEnv({ WEBHOOK_SECRET: '  ' })).WEBHOOK_SECRET).toBeUndefined();
  });

  it('When a 16-character secret is set, then development accepts it, as before', () => {
    expect(loadConfig(buildEnv({ WEBHOOK_SECRET: 'dev-secret-16chr' })).WEBHOOK_SECRET).toBe(
      'dev-secret-16chr',
    );
  });

  it('When the secret is shorter than 16 characters or not printable ASCII, then every environment refuses it', () => {
    expect(refusal(buildEnv({ WEBHOOK_SECRET: 'too-short' })).problems).toEqual([
      'WEBHOOK_SECRET: must be at least 16 characters',
    ]);
    expect(refusal(buildEnv({ WEBHOOK_SECRET: 'secret with spaces in it' })).problems).toEqual([
      'WEBHOOK_SECRET: must be printable ASCII without spaces',
    ]);
  });
});

describe('insecure settings in production', () => {
  it('When production runs with the development defaults, then it refuses to boot naming every problem at once', () => {
    const error = refusal(
      buildEnv({
        NODE_ENV: 'production',
        SSRF_ALLOWLIST: '127.0.0.1',
        X402_REFERENCE_SECRET: 'CHANGE_ME_reference_secret_of_some_length',
      }),
    );
    expect(error.problems).toEqual([
      'DATABASE_URL: points at 127.0.0.1, a loopback address, in production',
      'AMQP_URL: points at 127.0.0.1, a loopback address, in production',
      "AMQP_URL: uses RabbitMQ's default guest:guest credentials in production",
      'SOLANA_RPC_URL: points at 127.0.0.1, a loopback address, in production',
      'SSRF_ALLOWLIST: must be empty in production (it lets requests reach private addresses)',
      'X402_REFERENCE_SECRET: still the CHANGE_ME placeholder of the secret template; set a random value',
    ]);
    expect(error.message).not.toContain('CHANGE_ME_reference');
  });

  it('When the broker URL has no credentials, then production refuses it', () => {
    expect(refusal(productionEnv({ AMQP_URL: 'amqp://rabbitmq.internal:5672' })).problems).toEqual([
      'AMQP_URL: has no credentials (RabbitMQ then uses its default guest account)',
    ]);
  });

  it('When development runs with the same defaults, then it boots', () => {
    expect(loadConfig(buildEnv({ SSRF_ALLOWLIST: '127.0.0.1' })).NODE_ENV).toBe('development');
  });

  it('When every setting is production-grade, then production boots', () => {
    const config = loadConfig(productionEnv({ X402_REFERENCE_SECRET: randomBytes(32).toString('base64') }));
    expect(config.NODE_ENV).toBe('production');
  });
});
