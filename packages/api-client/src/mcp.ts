// Paying MCP tools (README, "Three lines each" and "Paying MCP tools"): the x402 MCP transport of
// services/market-intel/README.md ("Paying over MCP") on top of the payer's own engine. A tool's
// payment-required result is handed to the engine as the 402 it stands for, and the engine's paid
// repeat (its PAYMENT-SIGNATURE or X-PAYMENT header) goes back as `_meta["x402/payment"]`, so an MCP
// payment passes the same allowlists, caps, dry-run and receipts as an HTTP one. No MCP SDK code is
// imported: the client is typed by the one method used, so the SDK stays the caller's.
import { PaymentRefusedError } from './payments/errors';
import { payThrough, receiptOf, type Payer, type PaymentReceipt } from './payments/payer';
import { formatAtomic } from './payments/usdc';

/** `_meta` key of a tool call's payment (the x402 `PaymentPayload` object). */
export const MCP_PAYMENT_META = 'x402/payment';
/** `_meta` key of a paid result's settlement `{ success, transaction, network, payer }`. */
export const MCP_PAYMENT_RESPONSE_META = 'x402/payment-response';
/** `_meta` key of the push-mode (x402 v1) offer riding beside a v2 `PaymentRequired`. */
export const MCP_PUSH_PAYMENT_REQUIRED_META = 'x402-solana/push-payment-required';
/** `_meta` key of the error envelope of a refused payment. */
const MCP_PAYMENT_ERROR_META = 'x402-solana/error';
/** `_meta` key of a paid tool's price in the tool list (services/market-intel/README.md, "Prices in the tool list"). */
export const MCP_PRICE_META = 'x402/price';

/** The parameters of a `tools/call`, as the MCP SDK's `Client.callTool` takes them. */
export interface McpCallToolParams {
  /** The tool's name. */
  name: string;
  /** Its arguments. */
  arguments?: Record<string, unknown>;
  /** The request's `_meta`; a `x402/payment` already there is sent as is (nothing is paid). */
  _meta?: Record<string, unknown>;
}

/**
 * What the helper needs of an MCP client: the SDK's `Client` (`@modelcontextprotocol/sdk`) fits, and
 * so does anything with the same `callTool`.
 */
export interface McpToolClient {
  /** Sends `tools/call`; answers the tool result. */
  callTool(params: McpCallToolParams): Promise<unknown>;
}

/** The settlement a paid tool result carries in `_meta["x402/payment-response"]`. */
export interface McpSettlement {
  /** Whether the payment was settled. */
  success: boolean;
  /** The settling transaction's signature (base58). */
  transaction?: string;
  /** The network, as the server names it. */
  network?: string;
  /** The paying wallet (base58). */
  payer?: string;
  /** Why it failed, when it did. */
  errorReason?: string;
}

/** The answer of {@link PayingMcpClient.callTool}. */
export interface PaidToolResult<R> {
  /** The tool result: the paid one, or the first one when nothing was paid (free tool, dry run). */
  result: R;
  /** The payment's receipt (README, "The receipt"), when this call paid. */
  receipt?: PaymentReceipt;
  /**
   * The `PaymentPayload` sent in `_meta["x402/payment"]`, when one was: calling again with it in
   * `_meta` replays the stored answer without paying again (the server's ledger).
   */
  payment?: Record<string, unknown>;
  /** `_meta["x402/payment-response"]` of the result, when the server sent one. */
  settlement?: McpSettlement;
}

/** An MCP client whose paid tools are paid by a {@link Payer}: see {@link payingMcpClient}. */
export interface PayingMcpClient<R> {
  /**
   * Calls a tool; a payment-required result is paid once within the payer's spend controls and the
   * call repeated with the payment in `_meta["x402/payment"]`.
   * @throws SpendLimitExceededError, PaymentNotAllowedError (before anything is signed)
   * @throws PaymentRefusedError nothing payable is offered, or the server refused the payment
   * @throws InsufficientFundsError, RpcUnreachableError, PaymentConfirmationError, X402ClientError
   */
  callTool(params: McpCallToolParams): Promise<PaidToolResult<R>>;
}

/** Options of {@link payingMcpClient}. */
export interface PayingMcpOptions {
  /**
   * The MCP endpoint's URL (e.g. `http://127.0.0.1:3001/mcp`): the host `limits.allowHosts` checks,
   * and the `request.url` of offers and receipts (`<url>#tools/call/<tool>`, method `POST`). Without
   * it the request is `mcp:tools/call/<tool>`, which has no host: `allowHosts` then refuses every payment.
   */
  serverUrl?: string | URL;
}

/**
 * Wraps an MCP client so that paid tools pay themselves (services/market-intel/README.md, "Paying over
 * MCP"): official x402 scheme when offered, else push mode, as the payer's `mode` says, with the SAME
 * payer's allowlists, caps (per payment, rolling per hour and day), dry-run and receipts as its HTTP
 * payments, each checked before anything is signed. A payer in dry-run mode answers the
 * payment-required result without paying.
 * @param client the MCP SDK's `Client`, connected
 * @param payer made by `createPayer`
 * @throws TypeError (from a paid call) when `payer` was not made by `createPayer`
 */
export function payingMcpClient<C extends McpToolClient>(
  client: C,
  payer: Payer,
  options: PayingMcpOptions = {},
): PayingMcpClient<Awaited<ReturnType<C['callTool']>>> {
  type R = Awaited<ReturnType<C['callTool']>>;
  return {
    async callTool(params) {
      const meta = params._meta ?? {};
      if (meta[MCP_PAYMENT_META] !== undefined && meta[MCP_PAYMENT_META] !== null) {
        // The caller brings its payment (a replay of one made): sent as is.
        const result = (await client.callTool(params)) as R;
        return withSettlement({ result, payment: asObject(meta[MCP_PAYMENT_META]) }, result);
      }
      const first = (await client.callTool(params)) as R;
      if (!paymentRequiredOf(first)) return { result: first };

      let asked = false;
      let paid: R | undefined;
      let payment: Record<string, unknown> | undefined;
      // The engine's two requests: the first answers the result already in hand as its 402, the
      // repeat carries the payment the engine made, which goes into `_meta`.
      const transport = async (request: Request): Promise<Response> => {
        if (!asked) {
          asked = true;
          return challengeOf(first);
        }
        payment = paymentOf(request.headers);
        if (!payment) throw new PaymentRefusedError(`${request.url}: the payment could not be read back`);
        paid = (await client.callTool({
          ...params,
          _meta: { ...meta, [MCP_PAYMENT_META]: payment },
        })) as R;
        return answerOf(paid);
      };
      const response = await payThrough(
        payer,
        requestUrl(options.serverUrl, params.name),
        { method: 'POST' },
        transport,
      );
      if (paid === undefined) return { result: first };
      const receipt = receiptOf(response);
      return withSettlement({ result: paid, payment, ...(receipt ? { receipt } : {}) }, paid);
    },
  };
}

/** A paid tool's price as its listing states it (`tool._meta["x402/price"]`). */
export interface McpToolPrice {
  /** Atomic USDC units (6 decimals), a decimal string. */
  amountAtomic: string;
  /** USDC, a decimal string (`"0.10"`). */
  amountUsdc: string;
  /** The networks it can be paid on (`solana`, `solana-devnet`). */
  networks: string[];
  /** The offers, as the listing gives them (the fields of a call's payment requirements). */
  accepts: Record<string, unknown>[];
}

/**
 * The price a tool lists in `_meta["x402/price"]` (services/market-intel/README.md, "Prices in the tool
 * list"), or `undefined` for a tool that lists none (free, or a server without the key). Read it
 * from `client.listTools()` to compare with a budget before calling.
 * @param tool one of `listTools().tools`
 */
export function toolPrice(tool: { _meta?: Record<string, unknown> }): McpToolPrice | undefined {
  const price = asObject(tool._meta?.[MCP_PRICE_META]);
  const amount = price?.amount;
  if (typeof amount !== 'string' || !/^(0|[1-9][0-9]{0,30})$/.test(amount)) return undefined;
  return {
    amountAtomic: amount,
    amountUsdc: formatAtomic(BigInt(amount)),
    networks: Array.isArray(price!.networks) ? price!.networks.filter((n) => typeof n === 'string') : [],
    accepts: Array.isArray(price!.accepts)
      ? price!.accepts.flatMap((a) => {
          const offer = asObject(a);
          return offer ? [offer] : [];
        })
      : [],
  };
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function fieldsOf(result: unknown): {
  isError: boolean;
  structured?: Record<string, unknown>;
  meta: Record<string, unknown>;
} {
  const r = asObject(result) ?? {};
  const structured = asObject(r.structuredContent);
  return {
    isError: r.isError === true,
    ...(structured ? { structured } : {}),
    meta: asObject(r._meta) ?? {},
  };
}

/** The `PaymentRequired` of a payment-required tool error (x402 v1 or v2), else `undefined`. */
function paymentRequiredOf(result: unknown): Record<string, unknown> | undefined {
  const { isError, structured } = fieldsOf(result);
  if (!isError || !structured) return undefined;
  const version = structured.x402Version;
  return (version === 1 || version === 2) && Array.isArray(structured.accepts) ? structured : undefined;
}

const base64Json = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64');

/** The 402 a payment-required result stands for: v2 in `PAYMENT-REQUIRED`, v1 (push) as the body. */
function challengeOf(result: unknown): Response {
  const required = paymentRequiredOf(result)!;
  const { meta } = fieldsOf(result);
  const headers = new Headers({ 'content-type': 'application/json' });
  let body: unknown = required;
  if (required.x402Version === 2) {
    headers.set('payment-required', base64Json(required));
    body = asObject(meta[MCP_PUSH_PAYMENT_REQUIRED_META]) ?? {};
  }
  return new Response(JSON.stringify(body), { status: 402, headers });
}

/**
 * The HTTP answer a paid call's result stands for: a payment-required error (the payment refused) is
 * a 402 whose body names the reason; another result is a 200 (400 for a tool error) with the
 * settlement in `PAYMENT-RESPONSE` and the structured content as its JSON body.
 */
function answerOf(result: unknown): Response {
  const { isError, meta, structured } = fieldsOf(result);
  const required = paymentRequiredOf(result);
  if (required) {
    const envelope = asObject(meta[MCP_PAYMENT_ERROR_META]);
    const push =
      asObject(meta[MCP_PUSH_PAYMENT_REQUIRED_META]) ?? (required.x402Version === 1 ? required : {});
    const code = typeof envelope?.code === 'string' ? envelope.code : required.error;
    const body = {
      ...push,
      x402Version: 1,
      error:
        typeof envelope?.error === 'string' ? envelope.error : String(required.error ?? 'payment refused'),
      ...(typeof code === 'string' ? { details: { reason: code } } : {}),
    };
    return new Response(JSON.stringify(body), {
      status: 402,
      headers: { 'content-type': 'application/json' },
    });
  }
  const settlement = asObject(meta[MCP_PAYMENT_RESPONSE_META]);
  // The endpoint's body as it serialised it (JSON.stringify of the structured content it parsed):
  // what a receipt's `responseSha256` covers.
  return new Response(structured ? JSON.stringify(structured) : '{}', {
    status: isError ? 400 : 200,
    headers: settlement ? { 'payment-response': base64Json(settlement) } : {},
  });
}

/** The `PaymentPayload` the engine put in its repeat's payment header (base64 JSON). */
function paymentOf(headers: Headers): Record<string, unknown> | undefined {
  const value = headers.get('payment-signature') ?? headers.get('x-payment');
  if (!value) return undefined;
  try {
    return asObject(JSON.parse(Buffer.from(value, 'base64').toString('utf8')));
  } catch {
    return undefined;
  }
}

function requestUrl(serverUrl: string | URL | undefined, tool: string): string {
  const path = `tools/call/${encodeURIComponent(tool)}`;
  if (serverUrl === undefined) return `mcp:${path}`;
  const url = new URL(serverUrl);
  url.hash = path;
  return url.toString();
}

function withSettlement<R>(answer: PaidToolResult<R>, result: unknown): PaidToolResult<R> {
  const settlement = asObject(fieldsOf(result).meta[MCP_PAYMENT_RESPONSE_META]);
  return settlement && typeof settlement.success === 'boolean'
    ? { ...answer, settlement: settlement as unknown as McpSettlement }
    : answer;
}
