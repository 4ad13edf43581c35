import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Keypair } from '@solana/web3.js';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import {
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  wrapFetchWithSIWx,
  type CompleteSIWxInfo,
  type SIWxExtension,
} from '@x402/extensions/sign-in-with-x';

import { appendPaymentIdentifierToExtensions, generatePaymentId } from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment } from '@x402/fetch';
import { metricValue, scrape } from '@repo/service-kit/testing';
import { buildReport, startHarness, type Harness } from './support/harness';
import { balances, officialClient, officialFetch } from './support/official-client';
import { startScriptedRunner, type ScriptedRunner } from './support/runner';
import { siwxSignerOf as signerOf } from './support/sign-in';

// Sign-in-with-x (docs/payments.md, "Signing in instead of paying again"): the payer of a request signs
// the 402's challenge with its wallet, using the official client's SIWX support (@x402/extensions), to
// get the request again within the access window without paying; a used payment's answer goes only to
// its payer signed in. Real ledger, real PostgreSQL.
jest.setTimeout(120_000);

const WINDOW_SECONDS = 600;
let h: Harness;
let compute: ScriptedRunner | undefined;

beforeAll(async () => {
  h = await startHarness('market_intel_sign_in_with_x_test', {
    env: { X402_SIGN_IN_WITH_X: 'true', X402_ACCESS_WINDOW_SECONDS: `data=${WINDOW_SECONDS},jobs=900` },
  });
  await h.reports.importReport(buildReport(), 'import');
}, 180_000);

afterAll(async () => {
  await compute?.close();
  await h?.close();
});

/** A fresh wallet funded by the ledger with USDC (and SOL for its push payments). */
async function wallet(): Promise<Keypair> {
  const payer = Keypair.generate();
  await h.ledger.fund(payer.publicKey.toBase58(), { network: 'solana' });
  return payer;
}

/** The sign-in challenge of a 402 (its `PAYMENT-REQUIRED` extension). */
function challengeOf(res: Response): SIWxExtension {
  const header = res.headers.get('payment-required');
  expect(header).toBeTruthy();
  const required = decodePaymentRequiredHeader(header!);
  const challenge = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension | undefined;
  expect(challenge).toBeDefined();
  return challenge!;
}

/**
 * A `SIGN-IN-WITH-X` header signed by `payer` for the challenge of a fresh 402 of `path` from
 * `server` (the harness's by default), as the official client builds it (`createSIWxPayload`), with
 * `change` applied to the challenge first (a forged domain, an expired message), `origin` the URL the
 * client believes it talks to and `init` the unpaid request that gets the 402 (a GET by default).
 */
async function signIn(
  payer: Keypair,
  path: string,
  change: Partial<CompleteSIWxInfo> = {},
  origin = h.baseUrl,
  init?: RequestInit,
  server = origin,
): Promise<string> {
  const challenge = challengeOf(await fetch(server + path, init));
  const chain = challenge.supportedChains[0]!;
  const info: CompleteSIWxInfo = { ...challenge.info, chainId: chain.chainId, type: chain.type, ...change };
  return encodeSIWxHeader(await createSIWxPayload(info, await signerOf(payer), origin + path));
}

/** The reason of a refusal: `details.reason` of its body. */
async function reasonOf(res: Response): Promise<unknown> {
  const body = (await res.json()) as { details?: { reason?: unknown } };
  return body.details?.reason;
}

const paymentRows = async (payer: Keypair) =>
  Number(
    (
      await h.db.$queryRawUnsafe<{ n: bigint }[]>(
        'SELECT count(*) AS n FROM x402_payments WHERE payer = $1',
        payer.publicKey.toBase58(),
      )
    )[0]!.n,
  );

describe('sign-in-with-x', () => {
  it('When a 402 is answered, then PAYMENT-REQUIRED declares a fresh Solana sign-in challenge bound to the service', async () => {
    const first = challengeOf(await fetch(`${h.baseUrl}/api/v1/scout/gaps?limit=2`));
    const second = challengeOf(await fetch(`${h.baseUrl}/api/v1/scout/gaps?limit=2`));
    expect(first.info.domain).toBe(new URL(h.baseUrl).host);
    expect(first.info.uri).toBe(`${h.baseUrl}/api/v1/scout/gaps?limit=2`);
    expect(first.supportedChains).toEqual([
      { chainId: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', type: 'ed25519', signatureScheme: 'siws' },
    ]);
    expect(first.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(second.info.nonce).not.toBe(first.info.nonce);
    expect(Date.parse(first.info.expirationTime!) - Date.parse(first.info.issuedAt)).toBe(300_000);
  });

  it('When the payer signs in within the access window, then it gets the same query again without paying', async () => {
    const payer = await wallet();
    const path = '/api/v1/scout/gaps?limit=3';
    const paid = await (await officialFetch(h, payer))(h.baseUrl + path);
    expect(paid.status).toBe(200);
    const paidBody = await paid.text();
    const before = await balances(h, 'solana', payer);
    h.events.length = 0;

    // The official client's SIWX fetch: the 402's challenge signed, the request sent again with it.
    const again = await wrapFetchWithSIWx(fetch, await signerOf(payer))(h.baseUrl + path);

    expect(again.status).toBe(200);
    expect(await again.text()).toBe(paidBody);
    expect(again.headers.get('payment-response')).toBeNull();
    expect((await balances(h, 'solana', payer)).payerUsdc).toBe(before.payerUsdc);
    expect(await paymentRows(payer)).toBe(1);
    expect(h.events.map((e) => e.type)).toEqual(['challenged', 'signed_in']);

    // Another query was never paid for: the sign-in alone buys nothing.
    const other = await wrapFetchWithSIWx(
      fetch,
      await signerOf(payer),
    )(`${h.baseUrl}/api/v1/scout/gaps?limit=4`);
    expect(other.status).toBe(402);
    expect(await reasonOf(other)).toBe('siwx_no_access');
  });

  it('When the access window has passed, then the signed-in payer gets a 402 and pays again', async () => {
    const payer = await wallet();
    const path = '/api/v1/scout/pain-clusters?limit=2';
    expect((await (await officialFetch(h, payer))(h.baseUrl + path)).status).toBe(200);
    // The payment was verified longer ago than the window.
    await h.db.$executeRawUnsafe(
      `UPDATE x402_payments SET verified_at = now() - make_interval(secs => $2) WHERE payer = $1`,
      payer.publicKey.toBase58(),
      WINDOW_SECONDS + 1,
    );

    const late = await wrapFetchWithSIWx(fetch, await signerOf(payer))(h.baseUrl + path);

    expect(late.status).toBe(402);
    expect(await reasonOf(late)).toBe('siwx_no_access');
    expect(challengeOf(late).info.nonce).toMatch(/^[0-9a-f]{32}$/);
  });

  it("When a watcher presents a used push payment's signature, then it gets a 402, and only the payer signed in gets the answer again; /metrics counts the refusals apart from the one replay", async () => {
    const path = '/api/v1/scout/trends?limit=2';
    const signature = await h.transfer({ amountAtomic: 100_000n });
    const first = await h.getWithProof(path, signature);
    expect(first.status).toBe(200);
    const firstBody = await first.text();

    const watcher = await h.getWithProof(path, signature);
    expect(watcher.status).toBe(402);
    expect(await reasonOf(watcher)).toBe('siwx_required');
    expect(challengeOf(watcher).info.domain).toBe(new URL(h.baseUrl).host);

    const stranger = Keypair.generate();
    const signedStranger = await fetch(h.baseUrl + path, {
      headers: { 'X-PAYMENT': paymentHeaderOf(signature), [SIGN_IN_WITH_X]: await signIn(stranger, path) },
    });
    expect(signedStranger.status).toBe(402);
    expect(await reasonOf(signedStranger)).toBe('siwx_not_payer');
    // A proof that buys nothing leaves no nonce behind.
    expect(
      await h.db.$queryRawUnsafe(
        'SELECT 1 FROM x402_siwx_nonces WHERE address = $1',
        stranger.publicKey.toBase58(),
      ),
    ).toEqual([]);

    const payer = await fetch(h.baseUrl + path, {
      headers: { 'X-PAYMENT': paymentHeaderOf(signature), [SIGN_IN_WITH_X]: await signIn(h.agent, path) },
    });
    expect(payer.status).toBe(200);
    expect(await payer.text()).toBe(firstBody);
    expect(payer.headers.get('x-payment-response')).toBe(first.headers.get('x-payment-response'));

    // Only the answer sent again counts as replayed; the two withheld count as refused, by reason.
    const metrics = await scrape(h.metricsUrl);
    const count = (labels: Record<string, string>) =>
      metricValue(metrics, 'x402_payments_total', { endpoint: 'GET /api/v1/scout/trends', ...labels }) ?? 0;
    expect(count({ type: 'replayed' })).toBe(1);
    expect(count({ type: 'replay_refused', reason: 'siwx_required' })).toBe(1);
    expect(count({ type: 'replay_refused', reason: 'siwx_not_payer' })).toBe(1);
    expect(count({ type: 'replay_refused' })).toBe(2);
  });

  it("When the payer sends its identified official payment again (the answer lost), then it gets the stored answer without signing in; the same payment under another identifier is a watcher's and gets a 402", async () => {
    // The scout gaps route has the largest 402: the official client copies its extensions (bazaar,
    // the sign-in challenge) into the payment, which must still be accepted.
    const url = `${h.baseUrl}/api/v1/scout/gaps?sector=fintech`;
    const payer = await wallet();
    const id = generatePaymentId();
    const client = await officialClient(h, payer);
    client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      if (paymentRequired.extensions) appendPaymentIdentifierToExtensions(paymentRequired.extensions, id);
    });
    const sent: string[] = [];
    const recording: typeof fetch = (input, init) => {
      const request = new Request(input, init);
      const header = request.headers.get('payment-signature');
      if (header) sent.push(header);
      return fetch(request);
    };
    const first = await wrapFetchWithPayment(recording, client)(url);
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    expect(sent).toHaveLength(1);

    const again = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': sent[0]! } });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get('payment-response')).toBe(first.headers.get('payment-response'));

    const decoded = Buffer.from(sent[0]!, 'base64').toString('utf8');
    expect(decoded).toContain(id);
    const watcher = await fetch(url, {
      headers: {
        'PAYMENT-SIGNATURE': Buffer.from(decoded.replace(id, generatePaymentId())).toString('base64'),
      },
    });
    expect(watcher.status).toBe(402);
    expect(await reasonOf(watcher)).toBe('siwx_required');
    expect(await paymentRows(payer)).toBe(1);
  });

  it('When a sign-in proof is sent twice, then its nonce is refused the second time', async () => {
    const payer = await wallet();
    const path = '/api/v1/scout/keywords?limit=5';
    expect((await (await officialFetch(h, payer))(h.baseUrl + path)).status).toBe(200);
    const proof = await signIn(payer, path);

    const once = await fetch(h.baseUrl + path, { headers: { [SIGN_IN_WITH_X]: proof } });
    const twice = await fetch(h.baseUrl + path, { headers: { [SIGN_IN_WITH_X]: proof } });

    expect(once.status).toBe(200);
    expect(twice.status).toBe(402);
    expect(await reasonOf(twice)).toBe('invalid_siwx_nonce');
    const used = await h.db.$queryRawUnsafe<{ address: string }[]>(
      'SELECT address FROM x402_siwx_nonces WHERE address = $1',
      payer.publicKey.toBase58(),
    );
    expect(used).toHaveLength(1);
  });

  it('When a proof was signed for another domain, or has expired, or is malformed, then it is a 402 naming why', async () => {
    const payer = await wallet();
    const path = '/api/v1/scout/gaps?limit=5';
    expect((await (await officialFetch(h, payer))(h.baseUrl + path)).status).toBe(200);
    const send = (proof: string) => fetch(h.baseUrl + path, { headers: { [SIGN_IN_WITH_X]: proof } });

    const phishing = await send(
      await signIn(
        payer,
        path,
        { domain: 'intel.example.org', uri: `https://intel.example.org${path}` },
        'https://intel.example.org',
        undefined,
        h.baseUrl,
      ),
    );
    expect(phishing.status).toBe(402);
    expect(await reasonOf(phishing)).toBe('invalid_siwx_domain_mismatch');

    const now = Date.now();
    const expired = await send(
      await signIn(payer, path, {
        issuedAt: new Date(now - 120_000).toISOString(),
        expirationTime: new Date(now - 1000).toISOString(),
      }),
    );
    expect(expired.status).toBe(402);
    expect(await reasonOf(expired)).toBe('invalid_siwx_expired');

    const tooOld = await send(await signIn(payer, path, { issuedAt: new Date(now - 600_000).toISOString() }));
    expect(tooOld.status).toBe(402);
    expect(await reasonOf(tooOld)).toBe('invalid_siwx_issued_at_too_old');

    // Another wallet's signature over this payer's address.
    const forged = JSON.parse(Buffer.from(await signIn(payer, path), 'base64').toString('utf8')) as Record<
      string,
      string
    >;
    const stranger = JSON.parse(
      Buffer.from(await signIn(Keypair.generate(), path), 'base64').toString('utf8'),
    ) as Record<string, string>;
    const badSignature = await send(
      Buffer.from(JSON.stringify({ ...forged, signature: stranger.signature })).toString('base64'),
    );
    expect(badSignature.status).toBe(402);
    expect(await reasonOf(badSignature)).toBe('invalid_siwx_signature');

    for (const garbage of ['not base64 at all!', Buffer.from('{"domain":1}').toString('base64'), 'e30=']) {
      const malformed = await send(garbage);
      expect(malformed.status).toBe(402);
      expect(await reasonOf(malformed)).toBe('invalid_siwx_header');
    }
  });
  it("When a job's payer signs in and asks for the same job again, then it is sent to the job's status, and a watcher presenting the payment gets a 402 instead of the job id", async () => {
    compute = await startScriptedRunner(h, 'sign-in');
    const payer = await wallet();
    const url = `${h.baseUrl}/api/v1/prove/debate`;
    const init = () => ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ idea: 'A reconciliation copilot for mid-size fintechs' }),
    });
    const accepted = await (await officialFetch(h, payer))(url, init());
    expect(accepted.status).toBe(202);
    const { jobId } = (await accepted.json()) as { jobId: string };
    const before = await balances(h, 'solana', payer);

    const again = await wrapFetchWithSIWx(fetch, await signerOf(payer))(url, init());

    // fetch follows the 303 to the free job status.
    expect(again.status).toBe(200);
    expect(again.redirected).toBe(true);
    expect(new URL(again.url).pathname).toBe(`/api/v1/jobs/${jobId}`);
    expect(await again.json()).toMatchObject({ jobId });
    expect((await balances(h, 'solana', payer)).payerUsdc).toBe(before.payerUsdc);
    expect(await paymentRows(payer)).toBe(1);

    // Push mode: the transfer's signature is public; only its payer signed in learns the job id.
    const idea = { idea: 'A compliance inbox for small crypto exchanges' };
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const first = await h.postWithProof('/api/v1/prove/debate', idea, signature);
    expect(first.status).toBe(202);
    const pushJob = ((await first.json()) as { jobId: string }).jobId;
    const watcher = await h.postWithProof('/api/v1/prove/debate', idea, signature);
    expect(watcher.status).toBe(402);
    const watcherBody = await watcher.text();
    expect(watcherBody).not.toContain(pushJob);
    expect((JSON.parse(watcherBody) as { details?: { reason?: string } }).details?.reason).toBe(
      'siwx_required',
    );
    const owner = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-PAYMENT': paymentHeaderOf(signature),
        [SIGN_IN_WITH_X]: await signIn(h.agent, '/api/v1/prove/debate', {}, h.baseUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(idea),
        }),
      },
      body: JSON.stringify(idea),
    });
    expect(owner.status).toBe(409);
    expect(await owner.json()).toMatchObject({ code: 'payment_conflict', details: { jobId: pushJob } });
  });
});

// With sign-in on, the hot path answers the Data API's 402s with fresh challenges and leaves sign-ins
// and the replays of stored answers (which need the payer's proof) to the full path: a listener of the
// service's hot path in front of its app, counting what reaches the app.
describe('sign-in-with-x through the hot path', () => {
  let server: Server;
  let base: string;
  let fullPathCalls = 0;

  beforeAll(async () => {
    server = createServer(
      h.service.hotPath.wrap((req, res) => {
        fullPathCalls += 1;
        h.service.app(req, res);
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The first 402 of the route on this host teaches the hot path its template.
    expect((await fetch(`${base}/api/v1/scout/gaps?limit=9`)).status).toBe(402);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('When a new URL is asked twice, then the hot path answers two different valid challenges for it, without the full path', async () => {
    const url = `${base}/api/v1/scout/gaps?limit=8&sector=fintech`;
    const calls = fullPathCalls;
    const [first, second] = [challengeOf(await fetch(url)), challengeOf(await fetch(url))];
    expect(fullPathCalls).toBe(calls);
    for (const challenge of [first, second]) {
      expect(challenge.info).toMatchObject({ domain: new URL(base).host, uri: url, resources: [url] });
      expect(challenge.info.nonce).toMatch(/^[0-9a-f]{32}$/);
      expect(Date.parse(challenge.info.expirationTime!) - Date.parse(challenge.info.issuedAt)).toBe(300_000);
    }
    expect(second.info.nonce).not.toBe(first.info.nonce);
  });

  it('When the payer signs in with the official client on a challenge the hot path issued, then it gets the paid answer again', async () => {
    const payer = await wallet();
    const path = '/api/v1/scout/gaps?limit=6&sector=fintech';
    const paid = await (await officialFetch(h, payer))(base + path);
    expect(paid.status).toBe(200);
    const paidBody = await paid.text();

    const calls = fullPathCalls;
    const statuses: number[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    };
    const again = await wrapFetchWithSIWx(recording, await signerOf(payer))(base + path);

    expect(again.status).toBe(200);
    expect(await again.text()).toBe(paidBody);
    // The 402 came from the hot path; only the signed request reached the full path.
    expect(statuses).toEqual([402, 200]);
    expect(fullPathCalls).toBe(calls + 1);
    expect(await paymentRows(payer)).toBe(1);
  });

  it("When a watcher replays a stored answer's payment, then the full path answers its 402 every time and nothing is replayed; the payer signed in gets the answer", async () => {
    const path = '/api/v1/scout/keywords?limit=7';
    const signature = await h.transfer({ amountAtomic: 50_000n });
    const pay = (headers: Record<string, string> = {}) =>
      fetch(base + path, { headers: { 'X-PAYMENT': paymentHeaderOf(signature), ...headers } });
    const first = await pay();
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const replays = h.service.hotPath.size().replays;
    const calls = fullPathCalls;

    for (const watcher of [await pay(), await pay()]) {
      expect(watcher.status).toBe(402);
      expect(await reasonOf(watcher)).toBe('siwx_required');
    }
    expect(fullPathCalls).toBe(calls + 2);
    expect(h.service.hotPath.size().replays).toBe(replays);

    const payer = await pay({ [SIGN_IN_WITH_X]: await signIn(h.agent, path, {}, base) });
    expect(payer.status).toBe(200);
    expect(await payer.text()).toBe(firstBody);
    expect(h.service.hotPath.size().replays).toBe(replays);
  });
});

/** `X-PAYMENT` for a push payment's signature (base64 JSON), as a watcher of the chain builds it. */
function paymentHeaderOf(signature: string): string {
  return Buffer.from(
    JSON.stringify({
      x402Version: 1,
      scheme: 'exact',
      network: 'solana',
      payload: { txSignature: signature },
    }),
  ).toString('base64');
}
