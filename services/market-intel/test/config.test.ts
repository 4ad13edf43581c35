import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { configRefusal } from '@repo/service-kit/testing';
import { ReceiptIssuer } from '@repo/x402-core/receipts';
import { loadConfig, signInWithXEnabled } from '../src/config';

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
    PUBLIC_BASE_URL: 'https://market-intel.example.com',
    X402_RECEIPT_SIGNING_KEY: RECEIPT_KEY,
    // Sign-in-with-x, on in production, needs the official offer on every network offered.
    X402_FEE_PAYER_KEYPAIR: '/var/run/secrets/x402/fee-payer.json',
    MERCHANT_WALLET: MERCHANT_WALLET,
    MERCHANT_WALLET_DEVNET: MERCHANT_WALLET,
    ...overrides,
  });
}

const MERCHANT_WALLET = 'Ga1xWFSRv4H3rh9rbTLfHEJ3Wy3nrbNDXAXzpaHyqJ9k';

const RECEIPT_KEY = ReceiptIssuer.generateKey();

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
      'X402_RECEIPT_SIGNING_KEY: must be set explicitly in production (the Ed25519 key signing offers and receipts, which payers keep as evidence (openssl genpkey -algorithm ed25519))',
      'PUBLIC_BASE_URL: must be set explicitly in production (the public origin of resource URLs and of the did:web key id of signed offers and receipts)',
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

describe('what production refuses beyond the obvious forms', () => {
  it.each([
    [
      'DATABASE_URL',
      'postgresql://market_intel:pw@postgres.internal:5432/market_intel?host=127.0.0.1',
      '127.0.0.1',
    ],
    ['DATABASE_URL', 'postgresql://market_intel:pw@db.localhost:5432/market_intel', 'db.localhost'],
    ['AMQP_URL', 'amqps://agents:a-broker-password@localhost.:5671', 'localhost.'],
    ['AMQP_URL', 'amqps://agents:a-broker-password@[::ffff:127.0.0.1]:5671', '[::ffff:7f00:1]'],
    ['SOLANA_RPC_URL', 'http://2130706433:8899', '127.0.0.1'],
  ])('When %s is %s, then production refuses it as loopback', (name, value, host) => {
    expect(refusal(productionEnv({ [name]: value })).problems).toEqual([
      `${name}: points at ${host}, a loopback address, in production`,
    ]);
  });

  it('When a secret is long but not random (one character, a word repeated), then production refuses it without echoing it', () => {
    const error = refusal(
      productionEnv({ WEBHOOK_SECRET: 'a'.repeat(32), X402_REFERENCE_SECRET: 'password'.repeat(4) }),
    );
    expect(error.problems).toEqual([
      expect.stringMatching(/^WEBHOOK_SECRET: does not look random/),
      expect.stringMatching(/^X402_REFERENCE_SECRET: does not look random/),
    ]);
    expect(error.message).not.toContain('passwordpassword');
  });

  it('When a secret is the hex of 32 random bytes, then production boots with it', () => {
    const secret = randomBytes(32).toString('hex');
    expect(loadConfig(productionEnv({ X402_REFERENCE_SECRET: secret })).X402_REFERENCE_SECRET).toBe(secret);
  });

  it('When CORS_ORIGINS holds * or a plain HTTP origin, then production refuses each; https origins boot', () => {
    expect(refusal(productionEnv({ CORS_ORIGINS: '*' })).problems).toEqual([
      'CORS_ORIGINS: "*" is not allowed in production; list the https:// origins that may call',
    ]);
    expect(refusal(productionEnv({ CORS_ORIGINS: 'https://a.example,http://b.example' })).problems).toEqual([
      'CORS_ORIGINS: http://b.example is plain HTTP; production allows https:// origins only',
    ]);
    expect(loadConfig(productionEnv({ CORS_ORIGINS: 'https://a.example' })).CORS_ORIGINS).toBe(
      'https://a.example',
    );
    expect(loadConfig(buildEnv({ CORS_ORIGINS: '*' })).CORS_ORIGINS).toBe('*');
  });
});

describe('devnet compute caps', () => {
  const devnet = {
    USDC_MINT_DEVNET: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
    MERCHANT_TOKEN_ACCOUNT_DEVNET: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
    SOLANA_DEVNET_RPC_URL: 'https://api.devnet.solana.com',
  };

  it('When production offers devnet without an explicit global cap, then it refuses to boot naming X402_DEVNET_COMPUTE_GLOBAL_PER_DAY', () => {
    expect(refusal(productionEnv(devnet)).problems).toEqual([
      expect.stringMatching(/^X402_DEVNET_COMPUTE_GLOBAL_PER_DAY: must be set explicitly in production/),
    ]);
    expect(refusal(productionEnv({ ...devnet, X402_DEVNET_COMPUTE_GLOBAL_PER_DAY: ' ' })).problems).toEqual([
      expect.stringMatching(/^X402_DEVNET_COMPUTE_GLOBAL_PER_DAY: must be set explicitly/),
    ]);
  });

  it('When production offers devnet with the global cap set, or turns devnet off, then it boots', () => {
    const config = loadConfig(productionEnv({ ...devnet, X402_DEVNET_COMPUTE_GLOBAL_PER_DAY: '40' }));
    expect(config.X402_DEVNET_COMPUTE_GLOBAL_PER_DAY).toBe(40);
    expect(loadConfig(productionEnv({ ...devnet, X402_DEVNET_ENABLED: 'false' })).NODE_ENV).toBe(
      'production',
    );
  });

  it('When development leaves the caps unset, then each wallet, client and the whole service get the development defaults', () => {
    const config = loadConfig(buildEnv(devnet));
    expect(config.X402_DEVNET_COMPUTE_PER_DAY).toBe(3);
    expect(config.X402_DEVNET_COMPUTE_PER_CLIENT_PER_DAY).toBe(10);
    expect(config.X402_DEVNET_COMPUTE_GLOBAL_PER_DAY).toBe(100);
  });
});

describe('the receipt keys', () => {
  it('When a key is not an Ed25519 key, then the service refuses to boot naming the variable without echoing the key', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .privateKey.export({ format: 'pem', type: 'pkcs8' })
      .toString();
    expect(refusal(productionEnv({ X402_RECEIPT_SIGNING_KEY: rsa })).problems).toEqual([
      'X402_RECEIPT_SIGNING_KEY: must be an Ed25519 key, not rsa',
    ]);
    const error = refusal(buildEnv({ X402_RECEIPT_SIGNING_KEY: 'not a key at all' }));
    expect(error.problems).toEqual([
      expect.stringMatching(/^X402_RECEIPT_SIGNING_KEY: is not an Ed25519 key/),
    ]);
    expect(error.message).not.toContain(rsa.split('\n')[1]!);
    expect(refusal(buildEnv({ X402_RECEIPT_PREVIOUS_KEYS: '{"kty":"EC"' })).problems).toEqual([
      'X402_RECEIPT_PREVIOUS_KEYS: published keys: not valid JSON',
    ]);
  });

  it('When the signing key is PEM or a JWK and previous keys are published, then the service boots', () => {
    const jwk = JSON.stringify(createPrivateKey(ReceiptIssuer.generateKey()).export({ format: 'jwk' }));
    const config = loadConfig(
      productionEnv({ X402_RECEIPT_SIGNING_KEY: jwk, X402_RECEIPT_PREVIOUS_KEYS: RECEIPT_KEY }),
    );
    expect(config.X402_RECEIPT_SIGNING_KEY).toBe(jwk);
  });
});

describe('the devnet mint and merchant token account', () => {
  it('When only one of them is set, then the service refuses to boot naming both, with the message every configuration error has', () => {
    for (const partial of [
      { USDC_MINT_DEVNET: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU' },
      { MERCHANT_TOKEN_ACCOUNT_DEVNET: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM' },
    ]) {
      const error = refusal(buildEnv(partial));
      expect(error.problems).toEqual([
        'USDC_MINT_DEVNET and MERCHANT_TOKEN_ACCOUNT_DEVNET must be set together',
      ]);
      expect(error.message).toBe(
        'Invalid configuration:\n  USDC_MINT_DEVNET and MERCHANT_TOKEN_ACCOUNT_DEVNET must be set together',
      );
    }
  });
});

describe('the fast-path switches', () => {
  const SWITCHES = ['X402_HOT_PATH', 'X402_DEFER_VERIFIED_MARK', 'REPORT_CACHE'] as const;

  it('When a switch is unset or blank, then its fast path is on; false, 0 or no turns it off; another value is refused naming it', () => {
    for (const name of SWITCHES) {
      expect(loadConfig(buildEnv())[name]).toBe(true);
      expect(loadConfig(buildEnv({ [name]: ' ' }))[name]).toBe(true);
      for (const off of ['false', '0', 'no']) expect(loadConfig(buildEnv({ [name]: off }))[name]).toBe(false);
      expect(refusal(buildEnv({ [name]: 'off' })).problems).toEqual([expect.stringMatching(`^${name}: `)]);
    }
  });
});

describe('sign-in-with-x and its access windows', () => {
  it('When X402_SIGN_IN_WITH_X is unset, then it is on in production only; set, it wins', () => {
    expect(signInWithXEnabled(loadConfig(buildEnv()))).toBe(false);
    expect(signInWithXEnabled(loadConfig(productionEnv()))).toBe(true);
    expect(signInWithXEnabled(loadConfig(productionEnv({ X402_SIGN_IN_WITH_X: 'false' })))).toBe(false);
    expect(
      signInWithXEnabled(
        loadConfig(
          buildEnv({
            X402_SIGN_IN_WITH_X: 'yes',
            X402_FEE_PAYER_KEYPAIR: '/keys/fee-payer.json',
            MERCHANT_WALLET: MERCHANT_WALLET,
          }),
        ),
      ),
    ).toBe(true);
    expect(refusal(buildEnv({ X402_SIGN_IN_WITH_X: 'maybe' })).problems).toEqual([
      expect.stringMatching(/^X402_SIGN_IN_WITH_X: /),
    ]);
  });

  it('When sign-in-with-x is on and a network offered has no official offer, then the service refuses to boot naming what is missing; off, it boots', () => {
    const bare = { X402_FEE_PAYER_KEYPAIR: undefined, MERCHANT_WALLET: undefined };
    expect(refusal(productionEnv(bare)).problems).toEqual([
      expect.stringMatching(/^X402_FEE_PAYER_KEYPAIR: sign-in-with-x is on .*X402_SIGN_IN_WITH_X=false/),
      expect.stringMatching(/^MERCHANT_WALLET: sign-in-with-x is on /),
    ]);
    const devnet = {
      USDC_MINT_DEVNET: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
      MERCHANT_TOKEN_ACCOUNT_DEVNET: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
      X402_DEVNET_COMPUTE_GLOBAL_PER_DAY: '40',
      SOLANA_DEVNET_RPC_URL: 'https://api.devnet.solana.com',
    };
    expect(refusal(productionEnv({ ...devnet, MERCHANT_WALLET_DEVNET: undefined })).problems).toEqual([
      expect.stringMatching(/^MERCHANT_WALLET_DEVNET: sign-in-with-x is on /),
    ]);
    expect(refusal(buildEnv({ X402_SIGN_IN_WITH_X: 'true' })).problems).toHaveLength(2);
    expect(loadConfig(productionEnv({ ...bare, X402_SIGN_IN_WITH_X: 'false' })).NODE_ENV).toBe('production');
    expect(
      loadConfig(
        productionEnv({ ...devnet, MERCHANT_WALLET_DEVNET: undefined, X402_DEVNET_ENABLED: 'false' }),
      ).NODE_ENV,
    ).toBe('production');
  });

  it('When X402_ACCESS_WINDOW_SECONDS is unset, one number, or per class, then the windows follow; else it is refused naming it', () => {
    const windows = (value?: string) =>
      loadConfig(buildEnv({ X402_ACCESS_WINDOW_SECONDS: value })).X402_ACCESS_WINDOW_SECONDS;
    expect(windows()).toEqual({ data: 3600, jobs: 86_400 });
    expect(windows(' ')).toEqual({ data: 3600, jobs: 86_400 });
    expect(windows('600')).toEqual({ data: 600, jobs: 600 });
    expect(windows('data=60, jobs=0')).toEqual({ data: 60, jobs: 0 });
    expect(windows('jobs=7200')).toEqual({ data: 3600, jobs: 7200 });
    for (const bad of [
      '-1',
      '1.5',
      'data=2592001',
      'data=60,data=70',
      'compute=60',
      'data',
      'data=1=2',
      'an hour',
    ]) {
      expect(refusal(buildEnv({ X402_ACCESS_WINDOW_SECONDS: bad })).problems).toEqual([
        expect.stringMatching(/^X402_ACCESS_WINDOW_SECONDS: /),
      ]);
    }
  });
});
