import { configRefusal } from '@repo/service-kit/testing';
import { loadConfig } from '../src/config';

// Production refuses insecure settings at boot, naming each (README, "Configuration").
const refusal = (env: NodeJS.ProcessEnv) => configRefusal(loadConfig, env);

describe('signal-feedback configuration in production', () => {
  it('When production runs with development settings, then it refuses to boot naming each', () => {
    const env = { NODE_ENV: 'production', DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' };
    expect(refusal(env).problems).toEqual([
      'DATABASE_URL: points at 127.0.0.1, a loopback address, in production',
    ]);
  });

  it('When development runs with the same settings, then it boots', () => {
    expect(loadConfig({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/x' }).NODE_ENV).toBe(
      'development',
    );
  });

  it('When production has a remote database, then it boots', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      DATABASE_URL: 'postgresql://svc:pw@db.internal:5432/x',
    });
    expect(config.NODE_ENV).toBe('production');
  });
});
