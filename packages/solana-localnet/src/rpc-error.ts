import {
  FailedTransactionMetadata,
  InstructionErrorCustom,
  TransactionErrorDuplicateInstruction,
  TransactionErrorInstructionError,
  TransactionErrorInsufficientFundsForRent,
  TransactionErrorProgramExecutionTemporarilyRestricted,
} from 'litesvm/dist/internal';

/** JSON-RPC error codes used by the ledger; the Solana-specific ones match a real validator's. */
export const RpcErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** sendTransaction preflight (simulation) failure; `data` carries err and logs. */
  sendTransactionPreflightFailure: -32002,
  /** sendTransaction signature verification failure. */
  transactionSignatureVerificationFailure: -32003,
  /** getTransaction of a versioned transaction without `maxSupportedTransactionVersion`. */
  unsupportedTransactionVersion: -32015,
  /** `minContextSlot` is ahead of the node's slot; `data.contextSlot` is the node's. */
  minContextSlotNotReached: -32016,
} as const;

/**
 * An error answered as a JSON-RPC `error` object `{ code, message, data? }`.
 * Thrown by method handlers; the server turns it into the response.
 */
export class RpcError extends Error {
  /**
   * @param code JSON-RPC error code (see {@link RpcErrorCode})
   * @param message human-readable message, as a real RPC node words it where one exists
   * @param data optional structured payload (for preflight failures: err, logs, unitsConsumed...)
   */
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** A `TransactionError` in the JSON form Solana RPC uses (`"BlockhashNotFound"`, `{ InstructionError: [0, { Custom: 1 }] }`...). */
export type RpcTransactionError = string | Record<string, unknown>;

// Variant names in declaration order of the const enums in litesvm's internal.d.ts (0.8.0); const
// enums cannot be read at runtime under isolatedModules, so the names are listed here.
const TRANSACTION_ERRORS = [
  'AccountInUse',
  'AccountLoadedTwice',
  'AccountNotFound',
  'ProgramAccountNotFound',
  'InsufficientFundsForFee',
  'InvalidAccountForFee',
  'AlreadyProcessed',
  'BlockhashNotFound',
  'CallChainTooDeep',
  'MissingSignatureForFee',
  'InvalidAccountIndex',
  'SignatureFailure',
  'InvalidProgramForExecution',
  'SanitizeFailure',
  'ClusterMaintenance',
  'AccountBorrowOutstanding',
  'WouldExceedMaxBlockCostLimit',
  'UnsupportedVersion',
  'InvalidWritableAccount',
  'WouldExceedMaxAccountCostLimit',
  'WouldExceedAccountDataBlockLimit',
  'TooManyAccountLocks',
  'AddressLookupTableNotFound',
  'InvalidAddressLookupTableOwner',
  'InvalidAddressLookupTableData',
  'InvalidAddressLookupTableIndex',
  'InvalidRentPayingAccount',
  'WouldExceedMaxVoteCostLimit',
  'WouldExceedAccountDataTotalLimit',
  'MaxLoadedAccountsDataSizeExceeded',
  'ResanitizationNeeded',
  'InvalidLoadedAccountsDataSizeLimit',
  'UnbalancedTransaction',
  'ProgramCacheHitMaxLimit',
  'CommitCancelled',
] as const;

const INSTRUCTION_ERRORS = [
  'GenericError',
  'InvalidArgument',
  'InvalidInstructionData',
  'InvalidAccountData',
  'AccountDataTooSmall',
  'InsufficientFunds',
  'IncorrectProgramId',
  'MissingRequiredSignature',
  'AccountAlreadyInitialized',
  'UninitializedAccount',
  'UnbalancedInstruction',
  'ModifiedProgramId',
  'ExternalAccountLamportSpend',
  'ExternalAccountDataModified',
  'ReadonlyLamportChange',
  'ReadonlyDataModified',
  'DuplicateAccountIndex',
  'ExecutableModified',
  'RentEpochModified',
  'NotEnoughAccountKeys',
  'AccountDataSizeChanged',
  'AccountNotExecutable',
  'AccountBorrowFailed',
  'AccountBorrowOutstanding',
  'DuplicateAccountOutOfSync',
  'InvalidError',
  'ExecutableDataModified',
  'ExecutableLamportChange',
  'ExecutableAccountNotRentExempt',
  'UnsupportedProgramId',
  'CallDepth',
  'MissingAccount',
  'ReentrancyNotAllowed',
  'MaxSeedLengthExceeded',
  'InvalidSeeds',
  'InvalidRealloc',
  'ComputationalBudgetExceeded',
  'PrivilegeEscalation',
  'ProgramEnvironmentSetupFailure',
  'ProgramFailedToComplete',
  'ProgramFailedToCompile',
  'Immutable',
  'IncorrectAuthority',
  'AccountNotRentExempt',
  'InvalidAccountOwner',
  'ArithmeticOverflow',
  'UnsupportedSysvar',
  'IllegalOwner',
  'MaxAccountsDataAllocationsExceeded',
  'MaxAccountsExceeded',
  'MaxInstructionTraceLengthExceeded',
  'BuiltinProgramsMustConsumeComputeUnits',
  'BorshIoError',
] as const;

// The Display strings of the most common errors, as a validator words them in preflight messages.
const TRANSACTION_ERROR_TEXT: Record<string, string> = {
  AccountInUse: 'Account in use',
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  ProgramAccountNotFound: 'Attempt to load a program that does not exist',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  AlreadyProcessed: 'This transaction has already been processed',
  BlockhashNotFound: 'Blockhash not found',
  SignatureFailure: 'Transaction did not pass signature verification',
  SanitizeFailure: 'Transaction failed to sanitize accounts offsets correctly',
  AddressLookupTableNotFound: "Transaction loads an address table account that doesn't exist",
  InvalidRentPayingAccount: 'Transaction leaves an account with a lower balance than rent-exempt minimum',
};

const INSTRUCTION_ERROR_TEXT: Record<string, string> = {
  GenericError: 'generic instruction error',
  InvalidArgument: 'invalid program argument',
  InvalidInstructionData: 'invalid instruction data',
  InvalidAccountData: 'invalid account data for instruction',
  AccountDataTooSmall: 'account data too small for instruction',
  InsufficientFunds: 'insufficient funds for instruction',
  IncorrectProgramId: 'incorrect program id for instruction',
  MissingRequiredSignature: 'missing required signature for instruction',
  AccountAlreadyInitialized: 'instruction requires an uninitialized account',
  UninitializedAccount: 'instruction requires an initialized account',
  NotEnoughAccountKeys: 'insufficient account keys for instruction',
  IllegalOwner: 'Provided owner is not allowed',
  ComputationalBudgetExceeded: 'Computational budget exceeded',
};

/** The outcome of converting a LiteSVM failure: its RPC JSON form and the validator-style message. */
export interface ConvertedTransactionError {
  /** The error as Solana RPC serialises it in `meta.err` and preflight `data.err`. */
  json: RpcTransactionError;
  /** Human text, e.g. `Error processing Instruction 0: custom program error: 0x1`. */
  message: string;
  /**
   * True when a real cluster would have included the transaction in a block (fee charged, `meta.err`
   * set): execution-stage errors. False for load-stage errors (bad blockhash, fee payer without
   * funds, ...), whose transactions are dropped.
   */
  landed: boolean;
}

/** Converts LiteSVM's failure value to the RPC JSON error, its message and whether it lands. */
export function convertTransactionError(failed: FailedTransactionMetadata): ConvertedTransactionError {
  const err = failed.err();
  if (typeof err === 'number') {
    const name = TRANSACTION_ERRORS[err] ?? `TransactionError${err}`;
    return { json: name, message: TRANSACTION_ERROR_TEXT[name] ?? name, landed: false };
  }
  if (err instanceof TransactionErrorInstructionError) {
    const inner = err.err();
    let json: string | Record<string, unknown>;
    let text: string;
    if (typeof inner === 'number') {
      const name = INSTRUCTION_ERRORS[inner] ?? `InstructionError${inner}`;
      json = name;
      text = INSTRUCTION_ERROR_TEXT[name] ?? name;
    } else if (inner instanceof InstructionErrorCustom) {
      json = { Custom: inner.code };
      text = `custom program error: 0x${inner.code.toString(16)}`;
    } else {
      json = { BorshIoError: inner.msg };
      text = `Failed to serialize or deserialize account data: ${inner.msg}`;
    }
    return {
      json: { InstructionError: [err.index, json] },
      message: `Error processing Instruction ${err.index}: ${text}`,
      landed: true,
    };
  }
  if (err instanceof TransactionErrorDuplicateInstruction) {
    return {
      json: { DuplicateInstruction: err.index },
      message: `Transaction contains a duplicate instruction (${err.index}) that is not allowed`,
      landed: false,
    };
  }
  if (err instanceof TransactionErrorInsufficientFundsForRent) {
    return {
      json: { InsufficientFundsForRent: { account_index: err.accountIndex } },
      message: `Transaction results in an account (${err.accountIndex}) with insufficient funds for rent`,
      landed: true,
    };
  }
  if (err instanceof TransactionErrorProgramExecutionTemporarilyRestricted) {
    return {
      json: { ProgramExecutionTemporarilyRestricted: { account_index: err.accountIndex } },
      message: `Execution of the program referenced by account at index ${err.accountIndex} is temporarily restricted.`,
      landed: false,
    };
  }
  return { json: 'UnknownError', message: String(err), landed: false };
}
