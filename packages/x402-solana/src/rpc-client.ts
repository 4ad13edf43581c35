import { Pool } from 'undici';
import { z } from 'zod';
import { bs58 } from './deps';
import { RpcTransportError } from './rpc-fetch';

/**
 * The small Solana JSON-RPC client of the paid path (docs/architecture.md, "How a paid request flows
 * (market-intel)", step 2): the calls of payment verification and of an official-scheme settlement,
 * one keep-alive connection pool, one `JSON.parse` per answer and zod validation of only the fields
 * read. It replaces web3.js v1's `Connection` and `@solana/kit`'s RPC over the global `fetch` on the
 * paid path, whose response handling costs milliseconds of CPU per call.
 */

/** Base58 (Bitcoin alphabet), possibly empty (instruction data with no bytes). */
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]*$/;

const index = z.number().int().nonnegative();

const instructionSchema = z.object({
  programIdIndex: index,
  accounts: z.array(index),
  data: z.string().regex(BASE58),
});

const tokenBalanceSchema = z.object({
  accountIndex: index,
  mint: z.string(),
  owner: z.string().optional(),
  uiTokenAmount: z.object({ amount: z.string().regex(/^\d+$/) }),
});

const transactionSchema = z.object({
  slot: index,
  blockTime: z.number().int().nullish(),
  version: z.union([z.literal('legacy'), z.number().int()]).optional(),
  meta: z
    .object({
      err: z.unknown(),
      preTokenBalances: z.array(tokenBalanceSchema).nullish(),
      postTokenBalances: z.array(tokenBalanceSchema).nullish(),
      innerInstructions: z.array(z.object({ index, instructions: z.array(instructionSchema) })).nullish(),
      loadedAddresses: z.object({ writable: z.array(z.string()), readonly: z.array(z.string()) }).nullish(),
    })
    .nullable(),
  transaction: z.object({
    message: z.object({
      accountKeys: z.array(z.string()),
      header: z.object({ numRequiredSignatures: index }).optional(),
      instructions: z.array(instructionSchema),
    }),
  }),
});

const signatureStatusesSchema = z.object({
  value: z.array(
    z
      .object({
        slot: index,
        err: z.unknown(),
        confirmationStatus: z.enum(['processed', 'confirmed', 'finalized']).nullish(),
      })
      .nullable(),
  ),
});

const balanceSchema = z.object({ value: index });

/**
 * One entry of a `getSignatureStatuses` answer: the slot it was processed in, its error (`null` when it
 * succeeded) and how far the cluster has confirmed it.
 */
export interface RpcSignatureStatus {
  /** The slot the transaction was processed in. */
  slot: number;
  /** The transaction's error as the node reports it; `null` or `undefined` when it succeeded. */
  err: unknown;
  /** `processed`, `confirmed` or `finalized`; `null` when the node does not say. */
  confirmationStatus?: 'processed' | 'confirmed' | 'finalized' | null;
}

/** An account in a base64 answer: its owning program and data; `null` when it does not exist. */
const accountSchema = z
  .object({ owner: z.string(), data: z.tuple([z.string(), z.literal('base64')]) })
  .nullable()
  .transform((account) =>
    account === null ? null : { owner: account.owner, data: Buffer.from(account.data[0], 'base64') },
  );

const accountInfoSchema = z.object({ value: accountSchema });

const multipleAccountsSchema = z.object({ value: z.array(accountSchema) });

/**
 * A compiled instruction as `getTransaction` with `encoding: "json"` writes it, top-level or in
 * `meta.innerInstructions`: indexes into the resolved account keys, data in base58.
 */
export type RpcInstruction = z.infer<typeof instructionSchema>;

/** One entry of `meta.preTokenBalances` / `meta.postTokenBalances`; `amount` is atomic units (decimal string). */
export type RpcTokenBalance = z.infer<typeof tokenBalanceSchema>;

/**
 * The part of a `getTransaction` answer (`encoding: "json"`, `maxSupportedTransactionVersion: 0`) that
 * payment verification reads; other fields of the answer are dropped. Addresses are base58 strings,
 * `slot` a slot number, `blockTime` Unix seconds (or null when the node does not know it).
 */
export type RpcTransaction = z.infer<typeof transactionSchema>;

/**
 * The RPC endpoint answered, but not with a usable result: an HTTP status other than 2xx, a JSON-RPC
 * `error` object, or a body that is not JSON or does not have the expected shape.
 */
export class RpcResponseError extends Error {
  /** The RPC URL. */
  readonly url: string;
  /** What was wrong: `http` status, JSON-RPC `rpc` error, or a `malformed` answer. */
  readonly kind: 'http' | 'rpc' | 'malformed';
  /** The HTTP status (`http`), or the JSON-RPC error code (`rpc`). */
  readonly code: number | undefined;

  /**
   * @param url the RPC URL
   * @param kind what was wrong
   * @param message human-readable explanation
   * @param code HTTP status or JSON-RPC error code
   * @param cause the parse or validation error, when there is one
   */
  constructor(url: string, kind: RpcResponseError['kind'], message: string, code?: number, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'RpcResponseError';
    this.url = url;
    this.kind = kind;
    this.code = code;
  }
}

/** Connection and timeout settings of a {@link SolanaRpcClient}. */
export interface SolanaRpcClientOptions {
  /**
   * Milliseconds within which a connection must be made and an answer's headers must arrive, and the
   * longest pause while its body arrives; default 10 000.
   */
  timeoutMs?: number;
  /** Most keep-alive connections to the endpoint; more concurrent calls queue. Default 32. */
  maxConnections?: number;
}

/**
 * A keep-alive JSON-RPC client for one Solana RPC URL (undici `Pool`), with the calls payment
 * verification and settlement make.
 */
export class SolanaRpcClient {
  /** The RPC URL. */
  readonly url: string;
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private nextId = 1;

  /**
   * @param url `http:` or `https:` JSON-RPC URL (a path, query and user-info are kept)
   * @param options timeout and pool size
   * @throws TypeError when `url` is not an http(s) URL
   */
  constructor(url: string, options: SolanaRpcClientOptions = {}) {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new TypeError(`not an http(s) RPC URL: ${url}`);
    this.url = url;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.path = `${parsed.pathname}${parsed.search}`;
    this.headers = { 'content-type': 'application/json' };
    if (parsed.username || parsed.password) {
      const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
      this.headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    }
    this.pool = new Pool(parsed.origin, {
      connections: options.maxConnections ?? 32,
      connect: { timeout: this.timeoutMs },
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
  }

  /**
   * `getTransaction(signature, { encoding: "json", commitment: "confirmed", maxSupportedTransactionVersion: 0 })`.
   *
   * @param signature base58 transaction signature
   * @returns the fields verification reads, or `null` when the node does not know the transaction (yet)
   * @throws RpcTransportError when the endpoint cannot be reached or times out
   * @throws RpcResponseError on an HTTP error status, a JSON-RPC error or a malformed answer
   */
  async getTransaction(signature: string): Promise<RpcTransaction | null> {
    const result = await this.call('getTransaction', [
      signature,
      { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
    ]);
    if (result === null) return null;
    return this.validate(transactionSchema, result, 'getTransaction');
  }

  /**
   * `getAccountInfo(address, { encoding: "base64", commitment: "confirmed" })`.
   *
   * @param address base58 account address
   * @returns the owning program (base58) and the account data, or `null` when the account does not exist
   * @throws RpcTransportError when the endpoint cannot be reached or times out
   * @throws RpcResponseError on an HTTP error status, a JSON-RPC error or a malformed answer
   */
  async getAccountInfo(address: string): Promise<{ owner: string; data: Buffer } | null> {
    const result = await this.call('getAccountInfo', [
      address,
      { encoding: 'base64', commitment: 'confirmed' },
    ]);
    return this.validate(accountInfoSchema, result, 'getAccountInfo').value;
  }

  /**
   * `getMultipleAccounts(addresses, { encoding: "base64", commitment: "confirmed" })`: one call for
   * several accounts.
   *
   * @param addresses base58 account addresses (at most 100, the RPC's limit)
   * @returns one entry per address, in order: its owning program (base58) and data, or `null` when
   *   the account does not exist
   * @throws RpcTransportError when the endpoint cannot be reached or times out
   * @throws RpcResponseError on an HTTP error status, a JSON-RPC error or a malformed answer (also
   *   when the answer does not have one entry per address)
   */
  async getMultipleAccounts(
    addresses: readonly string[],
  ): Promise<({ owner: string; data: Buffer } | null)[]> {
    const result = await this.call('getMultipleAccounts', [
      addresses,
      { encoding: 'base64', commitment: 'confirmed' },
    ]);
    const { value } = this.validate(multipleAccountsSchema, result, 'getMultipleAccounts');
    return this.oneEach('getMultipleAccounts', value, addresses.length, ['accounts', 'addresses']);
  }

  /**
   * `sendTransaction(transaction, { encoding: "base64", preflightCommitment: "confirmed" })`: the node
   * verifies the signatures and simulates the transaction first (its preflight), and sends nothing
   * when either fails: the simulation and the send in one call.
   *
   * @param transaction base64 wire transaction, fully signed
   * @returns its signature (base58), as the node reports it
   * @throws RpcTransportError when the endpoint cannot be reached or times out (it may have been sent)
   * @throws RpcResponseError on an HTTP error status, a JSON-RPC error (the node refused it: `code`
   *   -32002 when the preflight simulation failed, -32003 when a signature does not verify) or a
   *   malformed answer
   */
  async sendTransaction(transaction: string): Promise<string> {
    const result = await this.call('sendTransaction', [
      transaction,
      { encoding: 'base64', preflightCommitment: 'confirmed' },
    ]);
    return this.validate(z.string().min(1).regex(BASE58), result, 'sendTransaction');
  }

  /**
   * `getSignatureStatuses(signatures)`: one call for up to 256 signatures.
   *
   * @param signatures base58 transaction signatures (at most 256, the RPC's limit)
   * @returns one entry per signature, in order: its status, or `null` when the node does not know it
   * @throws RpcTransportError when the endpoint cannot be reached or times out
   * @throws RpcResponseError on an HTTP error status, a JSON-RPC error or a malformed answer (also
   *   when the answer does not have one entry per signature)
   */
  async getSignatureStatuses(signatures: readonly string[]): Promise<(RpcSignatureStatus | null)[]> {
    const result = await this.call('getSignatureStatuses', [signatures]);
    const { value } = this.validate(signatureStatusesSchema, result, 'getSignatureStatuses');
    return this.oneEach('getSignatureStatuses', value, signatures.length, ['statuses', 'signatures']);
  }

  /**
   * `getBalance(address, { commitment: "confirmed" })`.
   *
   * @param address base58 account address
   * @returns its balance in lamports (exact up to 2^53 lamports, about 9 million SOL)
   * @throws RpcTransportError when the endpoint cannot be reached or times out
   * @throws RpcResponseError on an HTTP error status, a JSON-RPC error or a malformed answer
   */
  async getBalance(address: string): Promise<bigint> {
    const result = await this.call('getBalance', [address, { commitment: 'confirmed' }]);
    return BigInt(this.validate(balanceSchema, result, 'getBalance').value);
  }

  /** Closes the pool's connections once calls in flight are done. */
  async close(): Promise<void> {
    await this.pool.close();
  }

  /**
   * One JSON-RPC 2.0 call over HTTP POST.
   * @returns the `result` member of the answer, parsed but not validated
   */
  private async call(method: string, params: unknown[]): Promise<unknown> {
    const payload = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    let status: number;
    let text: string;
    try {
      const response = await this.pool.request({
        method: 'POST',
        path: this.path,
        headers: this.headers,
        body: payload,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (error) {
      throw new RpcTransportError(this.url, error);
    }
    if (status < 200 || status > 299) {
      throw new RpcResponseError(
        this.url,
        'http',
        `${this.url} answered HTTP ${status} to ${method}`,
        status,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new RpcResponseError(
        this.url,
        'malformed',
        `${method}: the answer is not JSON`,
        undefined,
        error,
      );
    }
    if (typeof body !== 'object' || body === null) {
      throw new RpcResponseError(this.url, 'malformed', `${method}: the answer is not a JSON-RPC object`);
    }
    const { result, error } = body as { result?: unknown; error?: unknown };
    if (error !== undefined && error !== null) {
      const { code, message } = error as { code?: unknown; message?: unknown };
      throw new RpcResponseError(
        this.url,
        'rpc',
        `${method}: ${typeof message === 'string' ? message : 'JSON-RPC error'}`,
        typeof code === 'number' ? code : undefined,
      );
    }
    if (result === undefined)
      throw new RpcResponseError(this.url, 'malformed', `${method}: the answer has no result`);
    return result;
  }

  /** `value`, when it has one entry per item asked for; otherwise the answer is malformed. */
  private oneEach<T>(method: string, value: T[], asked: number, [entries, items]: [string, string]): T[] {
    if (value.length !== asked)
      throw new RpcResponseError(
        this.url,
        'malformed',
        `${method}: ${value.length} ${entries} for ${asked} ${items}`,
      );
    return value;
  }

  private validate<T>(schema: z.ZodType<T>, value: unknown, method: string): T {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid';
    throw new RpcResponseError(
      this.url,
      'malformed',
      `${method}: unexpected answer (${where})`,
      undefined,
      parsed.error,
    );
  }
}

/**
 * The owner (base58) of an SPL token account from its raw data: bytes 32..64 of the account layout
 * (`mint`, `owner`, `amount`, ...), the same in SPL Token and Token-2022.
 *
 * @returns undefined when the data is too short to be a token account
 */
export function tokenAccountOwner(data: Uint8Array): string | undefined {
  return data.length >= 64 ? bs58.encode(data.subarray(32, 64)) : undefined;
}
