// The agent demo's payment safety part (scripts/demo.ts, market-intel): a paid answer lost and retried
// under an x402 payment identifier, its signed receipt checked, and the payer signing in instead of
// paying again (docs/payments.md, "Paying for data (x402)").

import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import {
  appendPaymentIdentifierToExtensions,
  generatePaymentId,
  PAYMENT_IDENTIFIER,
} from '@x402/extensions/payment-identifier';
import { SIGN_IN_WITH_X, wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { getAssociatedTokenAddressSync, getLocalnetInfo } from '@repo/solana-localnet';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import { formatAtomic, verifyPaidAnswer } from '@repo/api-client';
import { BASE, note, parsed, show } from './demo-support';

/** The official x402 v2 client (`@x402/fetch` + `@x402/svm`) paying from `keypair` on both ledgers. */
export async function officialClient(
  keypair: Keypair,
  rpcUrls: Record<'solana' | 'solana-devnet', string>,
): Promise<x402Client> {
  const signer = await createKeyPairSignerFromBytes(keypair.secretKey);
  const client = new x402Client();
  const allowedAssets = [];
  for (const network of ['solana', 'solana-devnet'] as const) {
    const caip2 = CAIP2_NETWORKS[network] as `${string}:${string}`;
    client.register(caip2, new ExactSvmScheme(signer, { rpcUrl: rpcUrls[network] }));
    // The ledger's test mint is not one of the client's known assets: allow it, with a cap.
    const { mint } = await getLocalnetInfo(rpcUrls[network]);
    allowedAssets.push({ network: caip2, asset: mint, maxAmountPerPayment: '30000000' });
  }
  client.setSpendControls({ allowedAssets });
  return client;
}

/** The v2 offer of a paid route's 402 (its `PAYMENT-REQUIRED` header), or `undefined` when it makes none. */
export async function offerOf(url: string): Promise<PaymentRequired | undefined> {
  const unpaid = await fetch(url);
  await unpaid.body?.cancel();
  const header = unpaid.headers.get('payment-required');
  return header ? decodePaymentRequiredHeader(header) : undefined;
}

/** The decoded `PAYMENT-RESPONSE` of an answer, or `undefined` when it carries none (a refusal). */
export function settlementOf(response: Response): ReturnType<typeof decodePaymentResponseHeader> | undefined {
  const header = response.headers.get('payment-response');
  return header ? decodePaymentResponseHeader(header) : undefined;
}

/** The wallet's USDC balance on the ledger, in atomic units (its associated token account's). */
export async function usdcBalance(rpcUrl: string, owner: PublicKey): Promise<bigint> {
  const { mint } = await getLocalnetInfo(rpcUrl);
  const account = getAssociatedTokenAddressSync(new PublicKey(mint), owner);
  const { value } = await new Connection(rpcUrl, 'confirmed').getTokenAccountBalance(account);
  return BigInt(value.amount);
}

/** A paid answer the demo received, with what it paid. */
export interface PaidAnswer {
  url: string;
  response: Response;
  body: string;
  /** The price in atomic USDC units, as the offer asked. */
  price: string;
}

/**
 * Pays for one request with the official client under an x402 payment identifier (docs/payments.md,
 * "Retrying safely: payment identifiers") and loses the answer on its way back, as a dropped
 * connection would; the retry signs the payment again under the same identifier and gets the first
 * payment's answer, charged once. Then the same identifier on another request: 409.
 * @returns the retry's answer, or `undefined` when market-intel makes no official offer
 */
export async function retryWithPaymentIdentifier(
  keypair: Keypair,
  rpcUrls: Record<'solana' | 'solana-devnet', string>,
  sector: string,
): Promise<PaidAnswer | undefined> {
  const url = `${BASE}/api/v1/scout/pain-clusters?sector=${sector}&limit=1`;
  const offer = await offerOf(url);
  const price = offer?.accepts[0]?.amount;
  if (!offer || !price || !offer.extensions?.[PAYMENT_IDENTIFIER]) {
    note('Payment identifiers', ['(not offered: market-intel has no fee payer, X402_FEE_PAYER_KEYPAIR)']);
    return undefined;
  }
  const paymentId = generatePaymentId();
  const client = await officialClient(keypair, rpcUrls);
  // As the extension's documentation shows: every payment of this client carries the identifier.
  client.onBeforePaymentCreation(async ({ paymentRequired }) => {
    if (paymentRequired.extensions)
      appendPaymentIdentifierToExtensions(paymentRequired.extensions, paymentId);
  });

  // The network between agent and service: it counts the payments sent, and loses the first paid
  // answer after it left the service (kept here only to compare it with the retry's).
  let signed = 0;
  let lost: { body: string; paymentResponse: string | null } | undefined;
  const network: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const paid = request.headers.has('payment-signature');
    if (paid) signed += 1;
    const response = await fetch(request);
    if (!paid || lost) return response;
    lost = { body: await response.text(), paymentResponse: response.headers.get('payment-response') };
    throw new TypeError('fetch failed: the connection closed before the answer arrived');
  };
  const pay = wrapFetchWithPayment(network, client);

  const before = await usdcBalance(rpcUrls.solana, keypair.publicKey);
  const first = await pay(url).then(
    (res) => `HTTP ${res.status}`,
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  const retry = await pay(url);
  const body = await retry.text();
  const settlement = settlementOf(retry);
  const title = `GET ${url.slice(BASE.length)} paid with payment identifier ${paymentId}`;
  if (retry.status !== 200 || !settlement) {
    show(`${title}: first attempt ${first}; the retry refused`, retry.status, parsed(body));
    return undefined;
  }
  const after = await usdcBalance(rpcUrls.solana, keypair.publicKey);
  const same = (yes: boolean) => (yes ? 'the same' : 'NOT the same');
  note(title, [
    `first attempt: ${first} (did it pay? the agent cannot tell)`,
    `retry, same identifier, the payment signed again -> HTTP ${retry.status}`,
    `  ${same(body === lost?.body)} answer as the lost one, ${same(
      retry.headers.get('payment-response') === lost?.paymentResponse,
    )} PAYMENT-RESPONSE (transaction ${settlement.transaction})`,
    `${signed} payments signed, wallet USDC ${formatAtomic(before)} -> ${formatAtomic(after)}: ` +
      `charged ${formatAtomic(before - after)} USDC, the price (${formatAtomic(BigInt(price))} USDC) once`,
  ]);

  // A new request needs a new identifier: the same one on another query is refused, nothing sent.
  const otherPath = `/api/v1/scout/pain-clusters?sector=${sector}&limit=2`;
  const conflict = await wrapFetchWithPayment(fetch, client)(BASE + otherPath);
  show(
    `The same identifier on another request, GET ${otherPath}`,
    conflict.status,
    parsed(await conflict.text()),
  );
  const unchanged = await usdcBalance(rpcUrls.solana, keypair.publicKey);
  process.stdout.write(`  wallet USDC ${formatAtomic(unchanged)}: nothing charged\n`);
  return { url, response: retry, body, price };
}

/**
 * Checks a paid answer's signed receipt (docs/payments.md, "Signed offers and receipts") with the
 * client package's `verifyPaidAnswer`: against the keys the service publishes at
 * `/.well-known/jwks.json`, the SHA-256 of the body received and the payment made; then the same
 * receipt with a tampered body.
 */
export async function checkReceipt(answer: PaidAnswer, payer: PublicKey): Promise<void> {
  const facts = {
    url: answer.url,
    signature: settlementOf(answer.response)?.transaction ?? '',
    payer: payer.toBase58(),
    amountAtomic: answer.price,
  };
  const evidence = await verifyPaidAnswer(answer.response, Buffer.from(answer.body), facts);
  if (!evidence) {
    note('Signed receipt', ['(the answer carries none)']);
    return;
  }
  const changed = answer.body.replace(/\d/, (d) => String((Number(d) + 1) % 10));
  const tampered = await verifyPaidAnswer(
    answer.response,
    Buffer.from(changed === answer.body ? `${changed} ` : changed),
    facts,
  );
  const claims = evidence.claims;
  note(
    `Signed receipt of that answer: ${evidence.status}${evidence.problem ? ` (${evidence.problem})` : ''}`,
    [
      `checked against ${new URL(answer.url).origin}/.well-known/jwks.json, the body's SHA-256 and the payment`,
      ...(claims
        ? [
            `payer ${claims.payer} paid ${formatAtomic(BigInt(claims.amount))} USDC`,
            `transaction ${claims.transaction}`,
            `at ${new Date(claims.issuedAt * 1000).toISOString()}, body SHA-256 ${claims.responseSha256.slice(0, 16)}...`,
          ]
        : []),
      `the same receipt with one digit of the body changed: ${tampered?.status ?? 'no receipt'}` +
        `${tampered?.problem ? ` (${tampered.problem})` : ''}`,
    ],
  );
}

/**
 * Whether `url`'s 402 declares a challenge of the x402 `sign-in-with-x` extension in `PAYMENT-REQUIRED`
 * (docs/payments.md, "Signing in instead of paying again"): market-intel does with `X402_SIGN_IN_WITH_X`.
 */
export async function signInOffered(url: string): Promise<boolean> {
  return Boolean((await offerOf(url))?.extensions?.[SIGN_IN_WITH_X]);
}

/** The wallet as a Solana message signer for sign-in-with-x (`@solana/kit`'s key pair signer, wallet-adapter shape). */
export async function messageSigner(keypair: Keypair): Promise<{
  publicKey: string;
  signMessage: (message: Uint8Array) => Promise<Uint8Array>;
}> {
  const kit = await createKeyPairSignerFromBytes(keypair.secretKey);
  return {
    publicKey: kit.address,
    signMessage: async (message) => {
      const [signatures] = await kit.signMessages([{ content: message, signatures: {} }]);
      const signature = signatures?.[kit.address];
      if (!signature) throw new Error('the key pair signer returned no signature');
      return signature;
    },
  };
}

/**
 * Gets a paid answer again without paying: the payer signs the 402's sign-in-with-x challenge with the
 * official client's `wrapFetchWithSIWx` (docs/payments.md, "Signing in instead of paying again"),
 * within the access window; a wallet that paid for nothing signs in too and is refused with a 402.
 */
export async function signInAgain(
  path: string,
  paidBody: unknown,
  keypair: Keypair,
  rpcUrl: string,
): Promise<void> {
  const before = await usdcBalance(rpcUrl, keypair.publicKey);
  const again = await wrapFetchWithSIWx(fetch, await messageSigner(keypair))(BASE + path);
  const body = parsed(await again.text());
  const after = await usdcBalance(rpcUrl, keypair.publicKey);
  if (again.status !== 200) {
    show(`Signed in as the payer, GET ${path} again: refused`, again.status, body);
    return;
  }
  note(`Signed in as the payer, GET ${path} again`, [
    `HTTP ${again.status}, ${again.headers.get('payment-response') ? 'PAID AGAIN' : 'no payment made'}, ` +
      `${JSON.stringify(body) === JSON.stringify(paidBody) ? 'the same answer' : 'a fresh answer'}`,
    `wallet USDC ${formatAtomic(before)} -> ${formatAtomic(after)}`,
  ]);
  const stranger = await wrapFetchWithSIWx(fetch, await messageSigner(Keypair.generate()))(BASE + path);
  show(`Another wallet signed in, GET ${path}`, stranger.status, parsed(await stranger.text()));
}
