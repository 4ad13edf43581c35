import { bs58 } from './deps';

/** SPL Token program id. */
export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
/** SPL Token-2022 program id. */
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PRVFqqAtNc1Yt8JB';

const ACCOUNT_LEN = 165;
const MINT_LEN = 82;
// Token-2022 accounts and mints with extensions are longer and carry an account-type byte right after
// a base account's bytes (a mint's are padded to that length).
const ACCOUNT_TYPE_OFFSET = ACCOUNT_LEN;
const ACCOUNT_TYPE_MINT = 1;
const ACCOUNT_TYPE_ACCOUNT = 2;

/** `uiTokenAmount` as Solana RPC returns it. `amount` is in atomic units. */
export interface UiTokenAmount {
  amount: string;
  decimals: number;
  uiAmount: number | null;
  uiAmountString: string;
}

/** The decoded fields of an initialised SPL token account. `amount` is in atomic units. */
export interface TokenAccountState {
  mint: string;
  owner: string;
  amount: bigint;
  /** 1 initialised, 2 frozen. */
  state: number;
  isNative: boolean;
  delegate: string | null;
  delegatedAmount: bigint;
  closeAuthority: string | null;
}

/** The decoded fields of an initialised SPL mint. `supply` is in atomic units. */
export interface MintState {
  mintAuthority: string | null;
  supply: bigint;
  decimals: number;
  freezeAuthority: string | null;
}

function isTokenProgram(owner: string): boolean {
  return owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;
}

function optionalKey(data: Uint8Array, offset: number): string | null {
  const tag = data[offset] ?? 0;
  return tag === 1 ? bs58.encode(data.subarray(offset + 4, offset + 36)) : null;
}

function readU64(data: Uint8Array, offset: number): bigint {
  return Buffer.from(data.buffer, data.byteOffset + offset, 8).readBigUInt64LE(0);
}

/** Decodes an initialised SPL token account owned by `owner` (a program id); null for anything else. */
export function decodeTokenAccount(owner: string, data: Uint8Array): TokenAccountState | null {
  if (!isTokenProgram(owner)) return null;
  const isAccount =
    data.length === ACCOUNT_LEN ||
    (data.length > ACCOUNT_LEN && data[ACCOUNT_TYPE_OFFSET] === ACCOUNT_TYPE_ACCOUNT);
  if (!isAccount) return null;
  const state = data[108] ?? 0;
  if (state === 0) return null;
  return {
    mint: bs58.encode(data.subarray(0, 32)),
    owner: bs58.encode(data.subarray(32, 64)),
    amount: readU64(data, 64),
    delegate: optionalKey(data, 72),
    state,
    isNative: (data[109] ?? 0) === 1,
    delegatedAmount: readU64(data, 121),
    closeAuthority: optionalKey(data, 129),
  };
}

/** Decodes an initialised SPL mint owned by `owner` (a program id); null for anything else. */
export function decodeMint(owner: string, data: Uint8Array): MintState | null {
  if (!isTokenProgram(owner)) return null;
  const isMint =
    data.length === MINT_LEN ||
    (data.length > ACCOUNT_LEN && data[ACCOUNT_TYPE_OFFSET] === ACCOUNT_TYPE_MINT);
  if (!isMint || (data[45] ?? 0) !== 1) return null;
  return {
    mintAuthority: optionalKey(data, 0),
    supply: readU64(data, 36),
    decimals: data[44] ?? 0,
    freezeAuthority: optionalKey(data, 46),
  };
}

/** Formats an atomic amount as Solana RPC's `uiTokenAmount` (trimmed decimal string, float). */
export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  const digits = amount.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  const uiAmountString = fraction.length > 0 ? `${whole}.${fraction}` : whole;
  return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString), uiAmountString };
}
