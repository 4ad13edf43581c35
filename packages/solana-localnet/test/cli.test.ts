import { Keypair, Connection, PublicKey } from '@solana/web3.js';
import { runCli } from '../src/cli';
import { getAssociatedTokenAddressSync } from '../src/deps';
import { formatUsdcAmount, parseUsdcAmount, spawnLocalnet, type Localnet } from '../src/index';

function captureIo() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => out.push(t), err: (t: string) => err.push(t) }, out, err };
}

describe('cli', () => {
  let ledger: Localnet;

  beforeAll(async () => {
    // In its own process: litesvm's x87 state breaks float modulo here (spawnLocalnet's comment).
    ledger = await spawnLocalnet({ port: 0 });
  });

  afterAll(async () => {
    await ledger.close();
  });

  it('When fund is run with a decimal USDC amount, then the address is funded on both networks', async () => {
    const owner = Keypair.generate().publicKey;
    const { io, out } = captureIo();
    expect(await runCli(['fund', owner.toBase58(), '25.5', '--rpc', ledger.url], io)).toBe(0);
    expect(out.join('\n')).toContain('25.5 USDC');
    for (const network of ['solana', 'solana-devnet'] as const) {
      const connection = new Connection(ledger.networks[network].rpcUrl, 'confirmed');
      expect(await connection.getBalance(owner)).toBe(10_000_000_000);
      const ata = getAssociatedTokenAddressSync(new PublicKey(ledger.networks[network].mint), owner);
      expect((await connection.getTokenAccountBalance(ata)).value.amount).toBe('25500000');
    }
  });

  it('When info is run, then it prints the addresses of both networks, the agent and the x402 fee payer', async () => {
    const { io, out } = captureIo();
    expect(await runCli(['info', '--rpc', ledger.url], io)).toBe(0);
    const text = out.join('\n');
    expect(text).toContain(ledger.networks.solana.merchantTokenAccount);
    expect(text).toContain(ledger.networks['solana-devnet'].mint);
    expect(text).toContain(ledger.agent.publicKey);
    expect(text).toContain(ledger.feePayer.publicKey);
    expect(text).toContain(ledger.feePayer.keypairPath);
    expect(text).toContain('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1');
  });

  it('When the ledger is unreachable, then fund fails with a clear message and exit code 1', async () => {
    const { io, err } = captureIo();
    expect(
      await runCli(['fund', Keypair.generate().publicKey.toBase58(), '--rpc', 'http://127.0.0.1:1'], io),
    ).toBe(1);
    expect(err.join('\n')).toContain('cannot reach the ledger at http://127.0.0.1:1');
  });

  it('When arguments are invalid, then usage is printed with exit code 2', async () => {
    const { io, err } = captureIo();
    expect(await runCli(['fund', 'not-an-address'], io)).toBe(2);
    expect(await runCli(['fund', Keypair.generate().publicKey.toBase58(), '1.1234567'], io)).toBe(2);
    expect(err.join('\n')).toContain('Usage:');
  });

  it('When USDC amounts are converted, then whole-unit decimals map exactly to atomic units', () => {
    expect(parseUsdcAmount('25')).toBe(25_000_000n);
    expect(parseUsdcAmount('0.5')).toBe(500_000n);
    expect(parseUsdcAmount('0.000001')).toBe(1n);
    expect(() => parseUsdcAmount('-1')).toThrow();
    expect(() => parseUsdcAmount('1e3')).toThrow();
    expect(formatUsdcAmount(25_500_000n)).toBe('25.5');
    expect(formatUsdcAmount(1_000_000_000n)).toBe('1000');
  });
});

describe('cli arguments', () => {
  it('When a command gets an option it does not take, then it names the option, prints usage and exits 2', async () => {
    for (const [argv, option] of [
      [['info', '--bogus'], '--bogus'],
      [['info', '--port', '8899'], '--port'],
      [['fund', Keypair.generate().publicKey.toBase58(), '--memory'], '--memory'],
    ] as const) {
      const { io, err } = captureIo();
      expect(await runCli(argv, io)).toBe(2);
      expect(err.join('\n')).toMatch(new RegExp(`^error: unknown option ${option}\\n\\nUsage:`));
    }
  });

  it('When an option lacks its value, then it says so and exits 2', async () => {
    for (const argv of [
      ['info', '--rpc'],
      ['start', '--port', '--memory'],
    ]) {
      const { io, err } = captureIo();
      expect(await runCli(argv, io)).toBe(2);
      expect(err.join('\n')).toMatch(/^error: --(rpc|port) needs a value/);
    }
  });

  it('When --help is given or no command, then usage is printed, exiting 0 and 2', async () => {
    const help = captureIo();
    expect(await runCli(['fund', '--help'], help.io)).toBe(0);
    expect(help.out.join('\n')).toContain('solana-localnet fund <address> [usdc]');
    const none = captureIo();
    expect(await runCli([], none.io)).toBe(2);
    expect(none.out.join('\n')).toContain('Usage:');
    const unknown = captureIo();
    expect(await runCli(['serve'], unknown.io)).toBe(2);
    expect(unknown.err.join('\n')).toContain('error: unknown command "serve"');
  });
});
