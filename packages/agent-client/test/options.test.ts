import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@solana/web3.js';
import { loadKeypair } from '../src/keypair';
import {
  DEFAULT_DEVNET_RPC_URL,
  DEFAULT_RPC_URL,
  parseAgentPayArgs,
  UsageError,
  type AgentPayOptions,
} from '../src/options';

const cwd = mkdtempSync(join(tmpdir(), 'agent-pay-'));

function parse(argv: string[], env: NodeJS.ProcessEnv = {}, dir = cwd): AgentPayOptions {
  const options = parseAgentPayArgs(argv, env, dir);
  if (options === 'help' || 'command' in options) throw new Error('unexpected help or command');
  return options;
}

describe('agent-pay arguments', () => {
  it('When only a URL is given, then GET with the local RPC defaults, a 1 USDC spend cap and auto mode', () => {
    const options = parse(['http://127.0.0.1:3000/api/v1/scout/gaps']);
    expect(options).toMatchObject({
      url: 'http://127.0.0.1:3000/api/v1/scout/gaps',
      method: 'GET',
      rpcUrls: { solana: DEFAULT_RPC_URL, 'solana-devnet': DEFAULT_DEVNET_RPC_URL },
      json: false,
      maxAmountAtomic: 1_000_000n,
      mode: 'auto',
    });
    expect(DEFAULT_RPC_URL).toBe('http://127.0.0.1:8899');
    expect(DEFAULT_DEVNET_RPC_URL).toBe('http://127.0.0.1:8899/devnet');
  });

  it('When flags and environment are given, then flags win over the environment', () => {
    const env = {
      AGENT_KEYPAIR: '/env/key.json',
      SOLANA_RPC_URL: 'http://env-rpc',
      SOLANA_DEVNET_RPC_URL: '',
    };
    expect(parse(['http://x/y'], env)).toMatchObject({
      keypairPath: '/env/key.json',
      rpcUrls: { solana: 'http://env-rpc', 'solana-devnet': DEFAULT_DEVNET_RPC_URL },
    });
    const options = parse(
      [
        'http://x/y',
        '--keypair',
        '/k.json',
        '--rpc',
        'http://a',
        '--devnet-rpc',
        'http://b',
        '--data',
        '{"idea":"x"}',
        '--json',
        '--max-amount',
        '500',
      ],
      env,
    );
    expect(options).toMatchObject({
      keypairPath: '/k.json',
      rpcUrls: { solana: 'http://a', 'solana-devnet': 'http://b' },
      method: 'POST',
      data: '{"idea":"x"}',
      json: true,
      maxAmountAtomic: 500_000_000n,
    });
  });

  it('When --max-amount is a decimal USDC amount, then the cap is in atomic units; --push selects push mode', () => {
    expect(parse(['http://x/y', '--max-amount', '25'])).toMatchObject({
      maxAmountAtomic: 25_000_000n,
      mode: 'auto',
    });
    expect(parse(['http://x/y', '--max-amount', '0.5', '--push'])).toMatchObject({
      maxAmountAtomic: 500_000n,
      mode: 'push',
    });
    expect(parse(['http://x/y', '--max-amount', '1.000001']).maxAmountAtomic).toBe(1_000_001n);
    expect(parse(['http://x/y', '--max-amount', '0']).maxAmountAtomic).toBe(0n);
  });

  it('When --max-amount is not a USDC amount, then UsageError naming the flag', () => {
    for (const bad of ['-1', 'abc', '1.0000001', '1e3', '', '25 USDC'])
      expect(() => parse(['http://x/y', `--max-amount=${bad}`])).toThrow(
        /--max-amount must be an amount of USDC/,
      );
    expect(() => parse(['http://x/y', '--push=yes'])).toThrow(UsageError);
  });

  it('When no keypair is configured, then the local ledger agent keypair is found from the working directory upwards', () => {
    const root = mkdtempSync(join(tmpdir(), 'agent-pay-root-'));
    mkdirSync(join(root, '.data', 'ledger', 'keys'), { recursive: true });
    writeFileSync(join(root, '.data', 'ledger', 'keys', 'agent.json'), '[]');
    mkdirSync(join(root, 'services', 'x'), { recursive: true });
    expect(parse(['http://x/y'], {}, join(root, 'services', 'x')).keypairPath).toBe(
      join(root, '.data', 'ledger', 'keys', 'agent.json'),
    );
  });

  it('When the arguments are wrong, then UsageError', () => {
    expect(() => parse([])).toThrow(UsageError);
    expect(() => parse(['not a url'])).toThrow(/not a URL/);
    expect(() => parse(['http://x', '--method', 'DELETE'])).toThrow(/GET or POST/);
    expect(() => parse(['http://x', '--data', '{oops'])).toThrow(/JSON/);
    expect(() => parse(['http://x', '--bogus'])).toThrow(UsageError);
    expect(parseAgentPayArgs(['--help'], {}, cwd)).toBe('help');
  });

  it('When a keypair file is read, then it must be a JSON array of 64 bytes', () => {
    const keypair = Keypair.generate();
    const good = join(cwd, 'good.json');
    writeFileSync(good, JSON.stringify([...keypair.secretKey]));
    expect(loadKeypair(good).publicKey.toBase58()).toBe(keypair.publicKey.toBase58());
    const bad = join(cwd, 'bad.json');
    writeFileSync(bad, '[1,2,3]');
    expect(() => loadKeypair(bad)).toThrow(/64 bytes/);
    expect(() => loadKeypair(join(cwd, 'missing.json'))).toThrow(/not found/);
  });
});
