import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { Pool } from 'pg';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { errorHandler, notFoundHandler } from '@repo/errors';
import { spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { ReceiptIssuer } from '@repo/x402-core/receipts';
import { receiptKeysHandler, requirePayment, type PaymentGateway } from '@repo/x402-express';
import { PrismaPaymentLedger, type SqlClient } from '@repo/x402-ledger';
import { associatedTokenAccountOf, ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import { EXIT, runAgentPay } from '../src/index';
import { TEST_DATABASE_URL } from '@repo/x402-ledger/testing';

let localnet: Localnet;
let pool: Pool;
let server: import('node:http').Server;
let baseUrl: string;
/** A server offering both schemes (the official one settled by the ledger's fee payer). */
let officialServer: import('node:http').Server;
let officialUrl: string;
const dir = mkdtempSync(join(tmpdir(), 'agent-pay-e2e-'));
/** The official server signs offers and receipts (x402 offer-receipt) and publishes its key. */
const receipts = new ReceiptIssuer({ signingKey: ReceiptIssuer.generateKey() });

function writeKeypair(name: string, keypair: Keypair): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify([...keypair.secretKey]));
  return path;
}

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  pool = new Pool({ connectionString: TEST_DATABASE_URL, max: 5 });
  const db: SqlClient = {
    $queryRawUnsafe: async <T = unknown>(sql: string, ...values: unknown[]) =>
      (await pool.query(sql, values)).rows as T,
    $executeRawUnsafe: async (sql: string, ...values: unknown[]) =>
      (await pool.query(sql, values)).rowCount ?? 0,
  };
  const verifier = (network: 'solana' | 'solana-devnet') =>
    new SolanaPaymentVerifier({
      network,
      rpcUrl: localnet.networks[network].rpcUrl,
      asset: localnet.networks[network].mint,
      payTo: localnet.networks[network].merchantTokenAccount,
    });
  const gateway = {
    ledger: new PrismaPaymentLedger(db),
    verifiers: { solana: verifier('solana'), 'solana-devnet': verifier('solana-devnet') },
  };
  const app = express();
  app.use(express.json());
  app.get(
    '/api/v1/scout/keywords',
    requirePayment({ ...gateway, amountAtomic: 50_000n, description: 'Keywords' }),
    (_req, res) => {
      res.json({ keywords: [{ keyword: 'x402', count: 3 }] });
    },
  );
  app.post(
    '/api/v1/echo',
    requirePayment({ ...gateway, amountAtomic: 10_000n, description: 'Echo' }),
    (req, res) => {
      res.json({ received: req.body as unknown });
    },
  );
  app.use(notFoundHandler);
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const settler = (network: 'solana' | 'solana-devnet') =>
    new ExactSvmSettler({
      network,
      rpcUrl: localnet.networks[network].rpcUrl,
      asset: localnet.networks[network].mint,
      payTo: localnet.networks[network].merchantOwner,
      feePayerSecretKey: localnet.feePayer.keypair.secretKey,
    });
  const both: PaymentGateway = {
    ...gateway,
    settlers: { solana: settler('solana'), 'solana-devnet': settler('solana-devnet') },
    receipts,
  };
  const official = express();
  official.get(['/.well-known/jwks.json', '/.well-known/did.json'], receiptKeysHandler(receipts, undefined));
  official.get(
    '/api/v1/scout/keywords',
    requirePayment({ ...both, amountAtomic: 50_000n, description: 'Keywords' }),
    (_req, res) => {
      res.json({ keywords: [{ keyword: 'x402', count: 3 }] });
    },
  );
  official.get('/api/v1/sectors', (_req, res) => {
    res.json({ sectors: [], total_reports: 0, latest_overall: null });
  });
  official.post(
    '/api/v1/forge/ideate',
    requirePayment({ ...both, amountAtomic: 15_000_000n, description: 'Ideation' }),
    (_req, res) => {
      res.status(202).json({ jobId: 'job-1', status: 'queued' });
    },
  );
  official.use(notFoundHandler);
  official.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  officialServer = await new Promise((resolve) => {
    const s = official.listen(0, '127.0.0.1', () => resolve(s));
  });
  officialUrl = `http://127.0.0.1:${(officialServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  officialServer?.closeAllConnections();
  await new Promise((resolve) => officialServer?.close(resolve));
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await pool?.end();
  await localnet?.close();
});

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runAgentPay(argv, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: {},
    cwd: dir,
  });
  return { code, stdout, stderr };
}

function rpcFlags(): string[] {
  return [
    '--rpc',
    localnet.networks.solana.rpcUrl,
    '--devnet-rpc',
    localnet.networks['solana-devnet'].rpcUrl,
  ];
}

describe('agent-pay', () => {
  it('When the URL answers 402, then it pays, prints status, body, transaction and payer, and exits 0', async () => {
    const { code, stdout, stderr } = await run([
      `${baseUrl}/api/v1/scout/keywords`,
      '--keypair',
      localnet.agent.keypairPath,
      ...rpcFlags(),
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain('HTTP 200');
    expect(stdout).toContain('"keyword": "x402"');
    expect(stdout).toMatch(/^transaction [1-9A-HJ-NP-Za-km-z]{64,88}$/m);
    expect(stdout).toContain(`payer ${localnet.agent.publicKey}`);
  });

  it('When --json and --data are given on devnet, then it POSTs, pays on devnet and prints one JSON object', async () => {
    const { code, stdout } = await run([
      `${baseUrl}/api/v1/echo?network=devnet`,
      '--keypair',
      localnet.agent.keypairPath,
      ...rpcFlags(),
      '--data',
      '{"idea":"receipts"}',
      '--json',
    ]);
    expect(code).toBe(EXIT.ok);
    const out = JSON.parse(stdout) as {
      ok: boolean;
      status: number;
      body: unknown;
      payment: { network: string; payer: string; amountAtomic: string };
    };
    expect(out).toMatchObject({
      ok: true,
      status: 200,
      body: { received: { idea: 'receipts' } },
      payment: { network: 'solana-devnet', payer: localnet.agent.publicKey, amountAtomic: '10000' },
    });
  });

  it('When the wallet has no USDC on the local ledger, then exit 3 with balance, price and the fund command', async () => {
    const empty = Keypair.generate();
    const { code, stderr } = await run([
      `${baseUrl}/api/v1/scout/keywords`,
      '--keypair',
      writeKeypair('empty.json', empty),
      ...rpcFlags(),
    ]);
    expect(code).toBe(EXIT.insufficientFunds);
    expect(stderr).toBe(
      `agent-pay: insufficient funds: balance 0.00 USDC, price 0.05 USDC; fund it with: ` +
        `pnpm ledger fund ${empty.publicKey.toBase58()} 1 --rpc ${localnet.url}\n`,
    );
  });

  it('When the RPC is unreachable, then exit 4 with one line naming the RPC URL', async () => {
    const { code, stderr } = await run([
      `${baseUrl}/api/v1/scout/keywords`,
      '--keypair',
      localnet.agent.keypairPath,
      '--rpc',
      'http://127.0.0.1:1',
    ]);
    expect(code).toBe(EXIT.rpcUnreachable);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('http://127.0.0.1:1');
  });

  it('When the answer is not 2xx, then exit 1 with the status on stderr', async () => {
    const { code, stdout, stderr } = await run([
      `${baseUrl}/nope`,
      '--keypair',
      localnet.agent.keypairPath,
      ...rpcFlags(),
    ]);
    expect(code).toBe(EXIT.httpError);
    expect(stdout).toContain('HTTP 404');
    expect(stderr).toMatch(/answered HTTP 404: No route/);
  });

  it('When the command runs as a process, then --help exits 0 and a bad RPC exits 4', async () => {
    const cli = join(__dirname, '..', 'src', 'cli.ts');
    const exec = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ['--require', require.resolve('tsx/cjs'), '--conditions=@repo/source', cli, ...args],
          { cwd: dir, env: { ...process.env, AGENT_KEYPAIR: localnet.agent.keypairPath } },
          (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
        );
      });
    const help = await exec(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: agent-pay <url>');
    const down = await exec([`${baseUrl}/api/v1/scout/keywords`, '--rpc', 'http://127.0.0.1:1']);
    expect(down.code).toBe(4);
    expect(down.stderr).toMatch(/^agent-pay: Solana RPC http:\/\/127\.0\.0\.1:1 is unreachable/);
  });

  it('When a free URL is called as a process, then it answers without loading the Solana or x402 modules or reading a keypair', async () => {
    const cli = join(__dirname, '..', 'src', 'cli.ts');
    // Prints, at exit, the loaded modules that belong to the paying path (the Solana-free client-core
    // of @repo/x402-solana, errors and amounts, is not one of them).
    const probe = join(dir, 'loaded-probe.js');
    writeFileSync(
      probe,
      "process.on('exit', () => { process.stderr.write('loaded:' + JSON.stringify(Object.keys(require.cache).filter((m) => /@solana|@x402|x402-solana[\\\\/](src|dist)[\\\\/](?!client-core[\\\\/])/.test(m)).length) + '\\n'); });",
    );
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          '--require',
          require.resolve('tsx/cjs'),
          '--require',
          probe,
          '--conditions=@repo/source',
          cli,
          `${officialUrl}/api/v1/sectors`,
        ],
        { cwd: dir, env: { ...process.env, AGENT_KEYPAIR: join(dir, 'missing.json') } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
    });
    expect(result.code).toBe(EXIT.ok);
    expect(result.stdout).toContain('HTTP 200');
    expect(result.stdout).toContain('"total_reports": 0');
    expect(result.stderr).toBe('loaded:0\n');
  });
});

/** The agent's USDC (atomic units) and SOL (lamports), and the fee payer's SOL, on network `solana`. */
async function balances(): Promise<{ agentUsdc: bigint; agentSol: number; feePayerSol: number }> {
  const info = localnet.networks.solana;
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const account = new PublicKey(associatedTokenAccountOf(localnet.agent.publicKey, info.mint));
  return {
    agentUsdc: BigInt((await connection.getTokenAccountBalance(account)).value.amount),
    agentSol: await connection.getBalance(localnet.agent.keypair.publicKey),
    feePayerSol: await connection.getBalance(localnet.feePayer.keypair.publicKey),
  };
}

describe('agent-pay against a server offering the official x402 scheme', () => {
  it('When the server offers the official scheme, then agent-pay pays with it: the agent pays the price and no SOL, the output names the mode', async () => {
    const before = await balances();
    const { code, stdout, stderr } = await run([
      `${officialUrl}/api/v1/scout/keywords`,
      '--keypair',
      localnet.agent.keypairPath,
      ...rpcFlags(),
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain('HTTP 200');
    expect(stdout).toContain(
      `paid 0.05 USDC on solana, official x402 scheme (network fee paid by the server's fee payer ${localnet.feePayer.publicKey})`,
    );
    expect(stdout).toMatch(/^transaction [1-9A-HJ-NP-Za-km-z]{64,88}$/m);
    expect(stdout).toContain(`payer ${localnet.agent.publicKey}`);
    const after = await balances();
    expect(after.agentUsdc).toBe(before.agentUsdc - 50_000n);
    expect(after.agentSol).toBe(before.agentSol);
    expect(after.feePayerSol).toBeLessThan(before.feePayerSol);
  });

  it('When the price is 15 USDC and --max-amount is not given, then exit 5 naming the price and the flag, and nothing is paid', async () => {
    const before = await balances();
    const { code, stdout, stderr } = await run([
      `${officialUrl}/api/v1/forge/ideate`,
      '--keypair',
      localnet.agent.keypairPath,
      ...rpcFlags(),
      '--data',
      '{"idea":"receipts"}',
    ]);
    expect(code).toBe(EXIT.paymentFailed);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('asks 15.00 USDC, above --max-amount 1.00 USDC; pass --max-amount 15 to pay it');
    expect(await balances()).toEqual(before);
  });

  it('When --max-amount 25 and --push are given, then the 15 USDC price is paid in push mode (the agent pays the fee)', async () => {
    const before = await balances();
    const { code, stdout } = await run([
      `${officialUrl}/api/v1/forge/ideate`,
      '--keypair',
      localnet.agent.keypairPath,
      ...rpcFlags(),
      '--data',
      '{"idea":"receipts"}',
      '--max-amount',
      '25',
      '--push',
      '--json',
    ]);
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(stdout)).toMatchObject({
      ok: true,
      status: 202,
      payment: {
        mode: 'push',
        network: 'solana',
        amount: '15.00',
        amountAtomic: '15000000',
        payer: localnet.agent.publicKey,
        feePayer: localnet.agent.publicKey,
      },
    });
    const after = await balances();
    expect(after.agentUsdc).toBe(before.agentUsdc - 15_000_000n);
    expect(after.agentSol).toBeLessThan(before.agentSol);
    expect(after.feePayerSol).toBe(before.feePayerSol);
  });
});

/** A JSON-RPC proxy in front of the ledger that answers its `localnet_*` methods as a cluster does (-32601). */
async function startClusterLikeRpc(target: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const message = JSON.parse(body) as { id?: unknown; method?: unknown };
      if (typeof message.method === 'string' && message.method.startsWith('localnet_')) {
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: message.id,
            error: { code: -32601, message: 'Method not found' },
          }),
        );
        return;
      }
      void fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(
        async (answer) => {
          res.statusCode = answer.status;
          res.setHeader('content-type', 'application/json');
          res.end(await answer.text());
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The agent's USDC on network `solana`, in atomic units. */
async function usdcOf(owner: string): Promise<bigint> {
  const info = localnet.networks.solana;
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const account = new PublicKey(associatedTokenAccountOf(owner, info.mint));
  return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
}

describe('agent-pay --wait when the job cannot be followed', () => {
  it('When the service does not know the job the answer names, then exit 7 with one line saying so', async () => {
    const { code, stdout, stderr } = await run([
      `${officialUrl}/api/v1/forge/ideate`,
      '--keypair',
      localnet.agent.keypairPath,
      ...rpcFlags(),
      '--data',
      '{"sectors":["fintech"]}',
      '--max-amount',
      '15',
      '--wait',
    ]);
    expect(code).toBe(EXIT.jobFailed);
    expect(stdout).toContain('HTTP 202');
    expect(stdout).toMatch(/^paid 15\.00 USDC on solana, official x402 scheme/m);
    expect(stderr).toBe('agent-pay: --wait: market-intel knows no job job-1\n');
  });
});

describe('agent-pay when the wallet holds less than the price', () => {
  it('When the RPC is the local ledger, then exit 3 says balance and price in USDC and the fund command, which lets the payment through once run', async () => {
    const poor = Keypair.generate();
    const wallet = poor.publicKey.toBase58();
    await localnet.fund(wallet, { usdcAtomic: 10_000n });
    const keypair = writeKeypair('poor.json', poor);
    const args = [`${officialUrl}/api/v1/scout/keywords`, '--keypair', keypair, ...rpcFlags()];

    const refused = await run(args);
    expect(refused.code).toBe(EXIT.insufficientFunds);
    const command = `pnpm ledger fund ${wallet} 1 --rpc ${localnet.url}`;
    expect(refused.stderr).toBe(
      `agent-pay: insufficient funds: balance 0.01 USDC, price 0.05 USDC; fund it with: ${command}\n`,
    );
    expect(refused.stdout).toBe('');
    expect(await usdcOf(wallet)).toBe(10_000n);

    // The command as printed, from the workspace root.
    const [program = '', ...commandArgs] = command.split(' ');
    const funded = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(program, commandArgs, { cwd: join(__dirname, '..', '..', '..') }, (error, _stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      );
    });
    expect(funded).toMatchObject({ code: 0 });
    expect(await usdcOf(wallet)).toBe(1_010_000n);

    const paid = await run(args);
    expect(paid.code).toBe(EXIT.ok);
    expect(paid.stdout).toContain('paid 0.05 USDC on solana');
    expect(await usdcOf(wallet)).toBe(960_000n);
  }, 60_000);

  it('When --json is given, then the failure object carries the amounts in USDC and atomic units and the command', async () => {
    const poor = Keypair.generate();
    const wallet = poor.publicKey.toBase58();
    await localnet.fund(wallet, { usdcAtomic: 20_000n, network: 'solana-devnet' });
    const { code, stdout } = await run([
      `${officialUrl}/api/v1/scout/keywords?network=devnet`,
      '--keypair',
      writeKeypair('poor-devnet.json', poor),
      ...rpcFlags(),
      '--json',
    ]);
    expect(code).toBe(EXIT.insufficientFunds);
    expect(JSON.parse(stdout)).toEqual({
      ok: false,
      exitCode: 3,
      error: `insufficient funds: balance 0.02 USDC, price 0.05 USDC; fund it with: pnpm ledger fund ${wallet} 1 --rpc ${localnet.url}`,
      funds: {
        kind: 'token_balance',
        wallet,
        network: 'solana-devnet',
        asset: localnet.networks['solana-devnet'].mint,
        price: '0.05',
        priceAtomic: '50000',
        balance: '0.02',
        balanceAtomic: '20000',
        fundCommand: `pnpm ledger fund ${wallet} 1 --rpc ${localnet.url}`,
      },
    });
  });

  it('When the RPC is not the local ledger, then exit 3 names the wallet address to send the missing USDC to', async () => {
    const cluster = await startClusterLikeRpc(localnet.networks.solana.rpcUrl);
    try {
      const poor = Keypair.generate();
      const wallet = poor.publicKey.toBase58();
      await localnet.fund(wallet, { usdcAtomic: 10_000n });
      const { code, stderr } = await run([
        `${baseUrl}/api/v1/scout/keywords`,
        '--keypair',
        writeKeypair('poor-cluster.json', poor),
        '--rpc',
        cluster.url,
        '--push',
      ]);
      expect(code).toBe(EXIT.insufficientFunds);
      expect(stderr).toBe(
        `agent-pay: insufficient funds: balance 0.01 USDC, price 0.05 USDC on solana; send at least 0.04 USDC to wallet ${wallet}\n`,
      );
    } finally {
      await cluster.close();
    }
  });

  describe('receipts', () => {
    const receiptsDir = join(dir, 'receipts');

    async function payKeeping(): Promise<{ file: string; body: string; stdout: string }> {
      const { code, stdout, stderr } = await run([
        `${officialUrl}/api/v1/scout/keywords`,
        '--keypair',
        localnet.agent.keypairPath,
        ...rpcFlags(),
        '--receipts',
        receiptsDir,
      ]);
      expect(stderr).toBe('');
      expect(code).toBe(EXIT.ok);
      const signature = /^transaction (\S+)$/m.exec(stdout)![1]!;
      return {
        file: join(receiptsDir, `${signature}.json`),
        body: join(receiptsDir, `${signature}.body`),
        stdout,
      };
    }

    it('When --receipts is given, then the paid answer’s receipt is checked and saved with its body, and verify-receipt checks them offline', async () => {
      const { file, body, stdout } = await payKeeping();
      expect(stdout).toContain(`receipt verified, saved to ${file}`);
      expect(existsSync(body)).toBe(true);
      const kept = JSON.parse(readFileSync(file, 'utf8')) as { status: string; claims: { amount: string } };
      expect(kept).toMatchObject({ status: 'verified', claims: { amount: '50000' } });
      expect(JSON.parse(readFileSync(body, 'utf8'))).toEqual({ keywords: [{ keyword: 'x402', count: 3 }] });

      const checked = await run(['verify-receipt', file, body]);
      expect(checked.code).toBe(EXIT.ok);
      expect(checked.stdout).toContain('receipt verified: signed by did:web:127.0.0.1');
      expect(checked.stdout).toContain('body matches responseSha256');
      const json = await run(['verify-receipt', file, '--json']);
      expect(JSON.parse(json.stdout)).toMatchObject({
        ok: true,
        bodyChecked: false,
        claims: { amount: '50000' },
      });
    });

    it('When the body or the receipt was altered, or the key is not the service’s, then verify-receipt exits 8 naming why', async () => {
      const { file, body } = await payKeeping();
      const otherBody = join(dir, 'other.body');
      writeFileSync(otherBody, readFileSync(body, 'utf8').replace('3', '4'));
      const wrongBody = await run(['verify-receipt', file, otherBody]);
      expect(wrongBody.code).toBe(EXIT.receiptInvalid);
      expect(wrongBody.stderr).toContain('(body_mismatch)');

      const record = JSON.parse(readFileSync(file, 'utf8')) as { receipt: { signature: string } };
      const [header, payload, sig] = record.receipt.signature.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      const forged = Buffer.from(JSON.stringify({ ...claims, amount: '1' })).toString('base64url');
      const tamperedFile = join(dir, 'tampered.json');
      writeFileSync(
        tamperedFile,
        JSON.stringify({ ...record, receipt: { format: 'jws', signature: `${header}.${forged}.${sig}` } }),
      );
      const tampered = await run(['verify-receipt', tamperedFile, '--json']);
      expect(tampered.code).toBe(EXIT.receiptInvalid);
      expect(JSON.parse(tampered.stdout)).toMatchObject({ ok: false, reason: 'bad_signature' });

      const jwks = join(dir, 'other-jwks.json');
      const other = new ReceiptIssuer({ signingKey: ReceiptIssuer.generateKey() });
      writeFileSync(jwks, JSON.stringify(other.keySet(officialUrl)));
      const foreign = await run(['verify-receipt', file, '--jwks', jwks]);
      expect(foreign.code).toBe(EXIT.receiptInvalid);
      expect(foreign.stderr).toContain('(unknown_key)');
      const missing = await run(['verify-receipt', join(dir, 'nope.json')]);
      expect(missing.code).toBe(EXIT.usage);
    });
  });
});
