import { describeShortfall } from '../src/funds';
import { formatUsdc, parseUsdc, usdcArgument } from '../src/usdc';

const wallet = 'AgentWa11et1111111111111111111111111111111';

describe('USDC amounts as agent-pay prints them', () => {
  it('When an amount is shown, then it has at least two decimals and all the significant ones', () => {
    expect(formatUsdc(200_000n)).toBe('0.20');
    expect(formatUsdc(50_000n)).toBe('0.05');
    expect(formatUsdc(25_000_000n)).toBe('25.00');
    expect(formatUsdc(1n)).toBe('0.000001');
    expect(formatUsdc(0n)).toBe('0.00');
  });

  it('When an amount is a command-line value, then it has no trailing zeros and parses back', () => {
    expect(usdcArgument(15_000_000n)).toBe('15');
    expect(usdcArgument(200_000n)).toBe('0.2');
    expect(parseUsdc(usdcArgument(1_234_567n))).toBe(1_234_567n);
  });
});

describe('describeShortfall', () => {
  it('When the price is 0.20 and the balance 0.05 on the local ledger, then it proposes 1 USDC with the default ledger URL', () => {
    const { message, details } = describeShortfall(
      {
        kind: 'token_balance',
        wallet,
        network: 'solana',
        rpcUrl: 'http://127.0.0.1:8899',
        asset: 'Mint',
        priceAtomic: 200_000n,
        balanceAtomic: 50_000n,
        lamports: undefined,
      },
      true,
    );
    expect(message).toBe(
      `insufficient funds: balance 0.05 USDC, price 0.20 USDC; fund it with: pnpm ledger fund ${wallet} 1`,
    );
    expect(details.fundCommand).toBe(`pnpm ledger fund ${wallet} 1`);
  });

  it('When a 25 USDC debate meets 0.50 USDC on the ledger devnet, then it proposes the whole USDC that cover it', () => {
    const { message } = describeShortfall(
      {
        kind: 'token_balance',
        wallet,
        network: 'solana-devnet',
        rpcUrl: 'http://127.0.0.1:8899/devnet',
        asset: 'Mint',
        priceAtomic: 25_000_000n,
        balanceAtomic: 500_000n,
        lamports: undefined,
      },
      true,
    );
    expect(message).toBe(
      `insufficient funds: balance 0.50 USDC, price 25.00 USDC; fund it with: pnpm ledger fund ${wallet} 25`,
    );
  });

  it('When push mode lacks SOL on a cluster, then it names the wallet and the scheme that needs none', () => {
    const { message } = describeShortfall(
      {
        kind: 'sol_for_fees',
        wallet,
        network: 'solana',
        rpcUrl: 'https://rpc.example',
        asset: 'Mint',
        priceAtomic: 200_000n,
        balanceAtomic: undefined,
        lamports: 1_000n,
      },
      false,
    );
    expect(message).toBe(
      `insufficient funds: balance 0.000001 SOL, not enough SOL for the network fee of a push-mode payment on solana; ` +
        `send SOL to wallet ${wallet}, or pay without --push (the server pays the fee)`,
    );
  });
});
