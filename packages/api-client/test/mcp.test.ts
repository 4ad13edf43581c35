import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import {
  createPayer,
  marketIntelClient,
  PaymentNotAllowedError,
  PaymentRefusedError,
  payingMcpClient,
  SpendLimitExceededError,
  toolPrice,
  type PaymentOffer,
} from '../src/index';
import { startContractServer, type ContractServer } from './support/contract-server';

// Paying MCP tools with the payer's engine and spend controls, against a real MCP server speaking
// market-intel's payment-required convention (x402 middleware, PostgreSQL ledger, local Solana ledger).
jest.setTimeout(60_000);

let server: ContractServer;
let connection: Connection;
const clients: Client[] = [];

beforeAll(async () => {
  server = await startContractServer();
  connection = new Connection(server.localnet.networks.solana.rpcUrl, 'confirmed');
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.close();
});

async function connect(): Promise<Client> {
  const client = new Client({ name: 'api-client-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', server.baseUrl)));
  clients.push(client);
  return client;
}

async function wallet(): Promise<Keypair> {
  const keypair = Keypair.generate();
  await server.localnet.fund(keypair.publicKey.toBase58(), { usdcAtomic: 1_000_000n });
  return keypair;
}

const TOKEN_PROGRAM = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
const ATA_PROGRAM = new PublicKey('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');

async function balances(owner: Keypair): Promise<{ payer: bigint; merchant: bigint }> {
  const net = server.localnet.networks.solana;
  const mint = new PublicKey(net.mint);
  const [account] = PublicKey.findProgramAddressSync(
    [owner.publicKey.toBuffer(), TOKEN_PROGRAM.toBuffer(), mint.toBuffer()],
    ATA_PROGRAM,
  );
  const usdc = async (a: PublicKey) => BigInt((await connection.getTokenAccountBalance(a)).value.amount);
  return { payer: await usdc(account), merchant: await usdc(new PublicKey(net.merchantTokenAccount)) };
}

const rpcUrls = (): { solana: string } => ({ solana: server.localnet.networks.solana.rpcUrl });
const call = { name: 'scout_keywords', arguments: {} };

describe('Paying MCP tools', () => {
  it('When a paid tool is called, then it is paid once with the official scheme, the result is the data and the receipt is the settlement; a replay of the same payment does not pay again', async () => {
    const keypair = await wallet();
    const client = await connect();
    const { tools } = await client.listTools();
    expect(toolPrice(tools.find((t) => t.name === 'scout_keywords')!)).toMatchObject({
      amountAtomic: '50000',
      amountUsdc: '0.05',
    });
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls() });
    const paying = payingMcpClient(client, payer, { serverUrl: new URL('/mcp', server.baseUrl) });
    const before = await balances(keypair);

    const paid = await paying.callTool(call);

    expect(paid.result.isError).toBeFalsy();
    expect(paid.result.structuredContent).toMatchObject({ keywords: [{ keyword: 'x402', count: 3 }] });
    expect(paid.receipt).toMatchObject({
      scheme: 'official',
      amountAtomic: '50000',
      amountUsdc: '0.05',
      network: 'solana',
      payer: keypair.publicKey.toBase58(),
      request: { method: 'POST', url: `${server.baseUrl}/mcp#tools/call/scout_keywords` },
    });
    expect(paid.settlement).toMatchObject({ success: true, transaction: paid.receipt!.signature });
    expect(payer.receipts).toHaveLength(1);
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(50_000n);
    expect(after.merchant - before.merchant).toBe(50_000n);

    // The same payment again: the stored answer, nothing paid.
    const replay = await paying.callTool({ ...call, _meta: { 'x402/payment': paid.payment } });
    expect(replay.result.structuredContent).toEqual(paid.result.structuredContent);
    expect(replay.receipt).toBeUndefined();
    expect(payer.receipts).toHaveLength(1);
    expect(await balances(keypair)).toEqual(after);
  });

  it('When push mode is asked, then the tool is paid with a transfer of the price and the receipt names it', async () => {
    const keypair = await wallet();
    const paying = payingMcpClient(
      await connect(),
      createPayer({ signer: keypair, rpcUrls: rpcUrls(), mode: 'push' }),
    );
    const before = await balances(keypair);
    const paid = await paying.callTool(call);
    expect(paid.result.structuredContent).toMatchObject({ keywords: [{ keyword: 'x402' }] });
    expect(paid.receipt).toMatchObject({ scheme: 'push', amountAtomic: '50000' });
    expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
  });

  it('When the price is above the per-payment cap, then SpendLimitExceededError is thrown before anything is signed and no balance moves; dry-run answers the offer unpaid', async () => {
    const keypair = await wallet();
    const client = await connect();
    const signed: unknown[] = [];
    const adapter = {
      publicKey: keypair.publicKey,
      signTransaction: <T>(tx: T): Promise<T> => {
        signed.push(tx);
        throw new Error('must not be asked to sign');
      },
    };
    const before = await balances(keypair);
    const capped = payingMcpClient(
      client,
      createPayer({ signer: adapter, rpcUrls: rpcUrls(), limits: { maxPerPayment: '0.04' } }),
    );
    const refusal = await capped.callTool(call).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(SpendLimitExceededError);
    expect(refusal).toMatchObject({ code: 'spend_limit_exceeded', limit: 'per_payment' });

    const offers: PaymentOffer[] = [];
    const dry = payingMcpClient(
      client,
      createPayer({ signer: keypair, rpcUrls: rpcUrls(), dryRun: true, onOffer: (o) => offers.push(o) }),
    );
    const unpaid = await dry.callTool(call);
    expect(unpaid.result.isError).toBe(true);
    expect(unpaid.receipt).toBeUndefined();
    expect(offers).toMatchObject([{ scheme: 'official', amountAtomic: '50000' }]);

    expect(signed).toEqual([]);
    expect(await balances(keypair)).toEqual(before);
  });

  it('When the payer has paid over HTTP, then the same rolling cap counts it for an MCP payment; a host not allowed is refused', async () => {
    const keypair = await wallet();
    const client = await connect();
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls(), limits: { maxPerHour: '0.08' } });
    const http = await marketIntelClient(server.baseUrl, payer).GET('/api/v1/scout/keywords');
    expect(http.response.status).toBe(200);
    const before = await balances(keypair);
    const refusal = await payingMcpClient(client, payer, { serverUrl: new URL('/mcp', server.baseUrl) })
      .callTool(call)
      .catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: 'spend_limit_exceeded', limit: 'per_hour', spentAtomic: 50_000n });

    const allowed = createPayer({
      signer: keypair,
      rpcUrls: rpcUrls(),
      limits: { allowHosts: ['market.example.com'] },
    });
    const elsewhere = await payingMcpClient(client, allowed, { serverUrl: new URL('/mcp', server.baseUrl) })
      .callTool(call)
      .catch((e: unknown) => e);
    expect(elsewhere).toBeInstanceOf(PaymentNotAllowedError);
    expect(elsewhere).toMatchObject({ rule: 'host' });
    // Without serverUrl the call has no host: an allowlist of hosts refuses it.
    await expect(payingMcpClient(client, allowed).callTool(call)).rejects.toBeInstanceOf(
      PaymentNotAllowedError,
    );
    expect(await balances(keypair)).toEqual(before);
  });

  it('When the server refuses the payment it asked for, then PaymentRefusedError is thrown with the reason and nothing is settled', async () => {
    const keypair = await wallet();
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls() });
    const before = await balances(keypair);
    const refusal = await payingMcpClient(await connect(), payer)
      .callTool({ name: 'bait_and_switch', arguments: {} })
      .catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(PaymentRefusedError);
    // The brief's payment gate does not accept requirements made for the keywords.
    expect(refusal).toMatchObject({ code: 'payment_refused', reason: 'invalid_payment_requirements' });
    expect(payer.receipts).toEqual([]);
    expect(await balances(keypair)).toEqual(before);
  });
});
