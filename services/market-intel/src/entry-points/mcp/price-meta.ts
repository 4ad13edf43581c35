// The price of a paid MCP tool as data in the tool's `_meta` (README, "MCP"), so that an agent reads
// it from `tools/list` instead of parsing the description. The x402 MCP transport defines the keys of
// a call (`x402/payment`, `x402/payment-response`) but none for a listed tool; these are this
// service's, beside the discovery keys of Cloudflare's Agents SDK, which its paying clients read.
import type { X402Network } from '@repo/schemas';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import type { PaymentGateway } from '@repo/x402-express';
import type { PaidRoute } from '../../domain/prices';
import { usdc } from '../http/contract-parts';

/** `_meta` key of a paid tool's {@link ToolPrice}. */
export const MCP_PRICE_META = 'x402/price';
/** `_meta` key Cloudflare's Agents SDK reads: `true` on a paid tool. */
export const AGENTS_PAYMENT_REQUIRED_META = 'agents-x402/paymentRequired';
/** `_meta` key Cloudflare's Agents SDK reads: the price in US dollars, a number (USDC counted at par). */
export const AGENTS_PRICE_USD_META = 'agents-x402/priceUSD';

/**
 * One way to pay a paid tool, as the payment-required result of a call will offer it: the fields of an
 * x402 `PaymentRequirements` without the request-bound `extra.reference`.
 */
export interface ToolPaymentOffer {
  /** Always `exact`. */
  scheme: 'exact';
  /**
   * 2: the official x402 exact SVM scheme (the v2 `PaymentRequired` of the tool error; the server's
   * fee payer pays the network fee); 1: push mode (the agent sends the transfer, x402 v1).
   */
  x402Version: 1 | 2;
  /** x402 v2: the CAIP-2 id (`solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`); v1: `solana` or `solana-devnet`. */
  network: string;
  /** The USDC mint (base58). */
  asset: string;
  /** The price in atomic USDC units (6 decimals). */
  amount: string;
  /** v2: the merchant wallet (its associated token account receives); v1: the merchant token account. */
  payTo: string;
  /** v2: the server's fee payer, `{ feePayer }`. */
  extra?: { feePayer: string };
}

/** A paid tool's price, `_meta["x402/price"]` of its listing. */
export interface ToolPrice {
  /** Atomic USDC units per call, as a decimal string (`"100000"`). */
  amount: string;
  /** The same in USDC with two decimals (`"0.10"`). */
  amountUsdc: string;
  /** What is paid: `USDC`, 6 decimals; each offer names its network's mint. */
  currency: 'USDC';
  decimals: 6;
  /** The networks it can be paid on, as this service names them (`solana`, `solana-devnet`). */
  networks: X402Network[];
  /** The x402 schemes offered: `exact`. */
  schemes: 'exact'[];
  /** Every offer, official scheme first, per network. */
  accepts: ToolPaymentOffer[];
}

/** Where a network is paid: its mint and merchant accounts, and the fee payer when the official scheme is on. */
export interface NetworkPayment {
  network: X402Network;
  /** The USDC mint (base58). */
  asset: string;
  /** The merchant token account, push mode's `payTo`. */
  tokenAccount: string;
  /** The official scheme, when a fee payer is configured: the merchant wallet and the fee payer. */
  official?: { payTo: string; feePayer: string };
}

/**
 * The networks a payment gateway offers (its verifiers) and, where it has a settler, the official
 * scheme's merchant wallet and fee payer: what a 402 of the service advertises, known at start.
 */
export function networkPaymentsOf(gateway: Pick<PaymentGateway, 'verifiers' | 'settlers'>): NetworkPayment[] {
  const payments: NetworkPayment[] = [];
  for (const network of Object.keys(CAIP2_NETWORKS) as X402Network[]) {
    const verifier = gateway.verifiers[network];
    if (!verifier) continue;
    const settler = gateway.settlers?.[network];
    payments.push({
      network,
      asset: verifier.asset,
      tokenAccount: verifier.payTo,
      ...(settler ? { official: { payTo: settler.payTo, feePayer: settler.feePayer } } : {}),
    });
  }
  return payments;
}

/**
 * The `_meta` of a paid tool's listing (README, "MCP"): `x402/price` ({@link ToolPrice}: amount in
 * atomic units and in USDC, the networks, schemes and offers), and Cloudflare's
 * `agents-x402/paymentRequired` and `agents-x402/priceUSD`.
 * @param route the HTTP route the tool stands for (its price)
 * @param networks how each offered network is paid ({@link networkPaymentsOf})
 */
export function priceMetaOf(route: PaidRoute, networks: readonly NetworkPayment[]): Record<string, unknown> {
  const amount = route.amountAtomic.toString();
  const accepts: ToolPaymentOffer[] = [];
  for (const payment of networks) {
    if (payment.official) {
      accepts.push({
        scheme: 'exact',
        x402Version: 2,
        network: CAIP2_NETWORKS[payment.network],
        asset: payment.asset,
        amount,
        payTo: payment.official.payTo,
        extra: { feePayer: payment.official.feePayer },
      });
    }
    accepts.push({
      scheme: 'exact',
      x402Version: 1,
      network: payment.network,
      asset: payment.asset,
      amount,
      payTo: payment.tokenAccount,
    });
  }
  const price: ToolPrice = {
    amount,
    amountUsdc: usdc(route),
    currency: 'USDC',
    decimals: 6,
    networks: networks.map((n) => n.network),
    schemes: ['exact'],
    accepts,
  };
  return {
    [MCP_PRICE_META]: price,
    [AGENTS_PAYMENT_REQUIRED_META]: true,
    [AGENTS_PRICE_USD_META]: Number(route.amountAtomic) / 1e6,
  };
}
