import { PrismaPaymentLedger, type ClaimOutcome, type PaymentClaim, type SqlClient } from '../src/index';
import {
  PgSqlClient,
  buildClaimRequest,
  buildStoredResponse,
  buildVerifiedPayment,
} from '@repo/x402-ledger/testing';
import { claimedOf } from './support';

// The ledger's own guards, each tested where an earlier check in code cannot stand in for it: the
// lease condition inside the takeover statements (two replicas that both read the row as free), and
// the network of a completed payment (replays from the database and from the in-memory copy).

/** The statements that take a row over: a compare-and-set of `claim_token` to the new token ($2). */
const TAKEOVER = /UPDATE\s+x402_payments\s+SET\s+claim_token\s*=\s*\$2\b/;

/** Inspects rows and sets the scene (one pool); each replica has a pool of its own. */
let db: PgSqlClient;
let poolA: PgSqlClient;
let poolB: PgSqlClient;

beforeAll(() => {
  db = new PgSqlClient();
  poolA = new PgSqlClient();
  poolB = new PgSqlClient();
});

afterAll(async () => {
  await Promise.all([db.close(), poolA.close(), poolB.close()]);
});

/**
 * Lets statements through only once `parties` callers arrived, or fails them after `deadlineMs`: two
 * replicas that both decided to take a row over then send their takeovers together.
 */
class Barrier {
  arrivals = 0;
  private open: () => void = () => undefined;
  private readonly opened: Promise<void>;

  constructor(
    private readonly parties: number,
    private readonly deadlineMs = 5_000,
  ) {
    this.opened = new Promise<void>((resolve) => {
      this.open = resolve;
    });
  }

  async arrive(): Promise<void> {
    this.arrivals += 1;
    if (this.arrivals >= this.parties) this.open();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.opened,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new Error(
                  `only ${this.arrivals} of ${this.parties} replicas reached the takeover within ${this.deadlineMs} ms`,
                ),
              ),
            this.deadlineMs,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** `pool` as a {@link SqlClient} whose takeover statements wait at `barrier` before they are sent. */
function heldAtTakeover(pool: SqlClient, barrier: Barrier): SqlClient {
  return {
    $queryRawUnsafe: async <T>(sql: string, ...values: unknown[]) => {
      if (TAKEOVER.test(sql)) await barrier.arrive();
      return pool.$queryRawUnsafe<T>(sql, ...values);
    },
    $executeRawUnsafe: async (sql: string, ...values: unknown[]) => {
      if (TAKEOVER.test(sql)) await barrier.arrive();
      return pool.$executeRawUnsafe(sql, ...values);
    },
  };
}

/** Two replicas (a ledger each, on its own pool) whose takeovers are sent only once both decided on one. */
function racingReplicas(): { replicas: [PrismaPaymentLedger, PrismaPaymentLedger]; barrier: Barrier } {
  const barrier = new Barrier(2);
  // A loser waits a little for the winner, then answers busy.
  const options = { waitTimeoutMs: 400, pollIntervalMs: 20 };
  return {
    barrier,
    replicas: [
      new PrismaPaymentLedger(heldAtTakeover(poolA, barrier), options),
      new PrismaPaymentLedger(heldAtTakeover(poolB, barrier), options),
    ],
  };
}

interface Row {
  status: string;
  endpoint: string;
  network: string;
  claim_token: string | null;
}

async function rowOf(signature: string): Promise<Row | undefined> {
  const rows = await db.$queryRawUnsafe<Row[]>(
    'SELECT status, endpoint, network, claim_token FROM x402_payments WHERE signature = $1',
    signature,
  );
  return rows[0];
}

/** Moves the current lease a minute into the past: its holder crashed, its 30 s lease is over. */
async function expireLease(signature: string): Promise<void> {
  await db.$executeRawUnsafe(
    "UPDATE x402_payments SET claimed_at = now() - interval '1 minute' WHERE signature = $1",
    signature,
  );
}

/** The single `claimed` outcome of a race and the others. */
function winnerOf(outcomes: ClaimOutcome[]): { winner: PaymentClaim; others: ClaimOutcome[] } {
  const claimed = outcomes.filter((o) => o.outcome === 'claimed');
  expect(claimed).toHaveLength(1);
  const [first] = claimed;
  if (!first) throw new Error('no replica claimed the row');
  return { winner: claimedOf(first), others: outcomes.filter((o) => o !== first) };
}

describe('PrismaPaymentLedger: two replicas take over one abandoned lease at the same moment', () => {
  it('When both read an expired unverified lease as free and send their takeovers together, then exactly one claims it and the other is busy', async () => {
    const request = buildClaimRequest();
    const crashed = new PrismaPaymentLedger(db);
    const first = claimedOf(await crashed.claim(request));
    await expireLease(request.signature);
    const { replicas, barrier } = racingReplicas();

    const outcomes = await Promise.all(replicas.map((replica) => replica.claim(request)));

    // Both passed the check in code (the row read as free) and sent a takeover.
    expect(barrier.arrivals).toBeGreaterThanOrEqual(2);
    const { winner, others } = winnerOf(outcomes);
    expect(winner).toMatchObject({ takenOver: true, endpoint: request.endpoint });
    expect(others.map((o) => o.outcome)).toEqual(['busy']);
    expect(await rowOf(request.signature)).toEqual({
      status: 'processing',
      endpoint: request.endpoint,
      network: request.network,
      claim_token: winner.token,
    });
    // The crashed holder's lease is gone too.
    expect(await crashed.markVerified(first, buildVerifiedPayment({ signature: request.signature }))).toBe(
      false,
    );
    await new PrismaPaymentLedger(db).forget(winner);
  });

  it('When both take over a verified payment whose lease expired, then only one gets it (the handler runs once) and the other is busy', async () => {
    const request = buildClaimRequest();
    const crashed = new PrismaPaymentLedger(db);
    const first = claimedOf(await crashed.claim(request));
    const payment = buildVerifiedPayment({ signature: request.signature });
    expect(await crashed.markVerified(first, payment)).toBe(true);
    await expireLease(request.signature);
    const { replicas, barrier } = racingReplicas();

    const outcomes = await Promise.all(replicas.map((replica) => replica.claim(request)));

    expect(barrier.arrivals).toBeGreaterThanOrEqual(2);
    const { winner, others } = winnerOf(outcomes);
    expect(winner).toMatchObject({ takenOver: true, verified: { payer: payment.payer } });
    expect(others.map((o) => o.outcome)).toEqual(['busy']);
    expect(await rowOf(request.signature)).toMatchObject({ status: 'verified', claim_token: winner.token });
    const holder = new PrismaPaymentLedger(db);
    expect(await holder.complete(winner, buildStoredResponse({ once: true }))).toBe(true);
    expect(await rowOf(request.signature)).toMatchObject({ status: 'completed', claim_token: null });
  });

  it('When both take over an expired unverified claim of another endpoint for theirs, then exactly one moves it and the other is busy', async () => {
    const request = buildClaimRequest({ endpoint: 'GET /api/v1/scout/trends' });
    const crashed = new PrismaPaymentLedger(db);
    claimedOf(await crashed.claim(request));
    await expireLease(request.signature);
    const { replicas, barrier } = racingReplicas();
    const here = { ...request, endpoint: 'GET /api/v1/scout/gaps' };

    const outcomes = await Promise.all(replicas.map((replica) => replica.claim(here)));

    expect(barrier.arrivals).toBeGreaterThanOrEqual(2);
    const { winner, others } = winnerOf(outcomes);
    expect(winner).toMatchObject({ takenOver: true, endpoint: here.endpoint });
    expect(others.map((o) => o.outcome)).toEqual(['busy']);
    expect(await rowOf(request.signature)).toEqual({
      status: 'processing',
      endpoint: here.endpoint,
      network: here.network,
      claim_token: winner.token,
    });
    await new PrismaPaymentLedger(db).forget(winner);
  });
});

describe('PrismaPaymentLedger: a completed payment presented for another network', () => {
  /** A synchronous payment on `solana`, verified and completed with a stored answer. */
  async function completedPayment(ledger: PrismaPaymentLedger) {
    const request = buildClaimRequest({ network: 'solana', requestHash: 'd'.repeat(64) });
    const claim = claimedOf(await ledger.claim(request));
    expect(await ledger.markVerified(claim, buildVerifiedPayment({ signature: request.signature }))).toBe(
      true,
    );
    const stored = buildStoredResponse({ paid: 'on solana' });
    expect(await ledger.complete(claim, stored)).toBe(true);
    return { request, stored };
  }

  it('When another replica (nothing in its memory) is asked for the same signature and endpoint on another network, then other_endpoint, not a replay', async () => {
    const { request, stored } = await completedPayment(new PrismaPaymentLedger(poolA));

    const fresh = new PrismaPaymentLedger(poolB);
    const elsewhere = await fresh.claim({ ...request, network: 'solana-devnet' });

    expect(elsewhere.outcome).toBe('other_endpoint');
    expect(elsewhere).not.toHaveProperty('response');
    expect(await rowOf(request.signature)).toEqual({
      status: 'completed',
      endpoint: request.endpoint,
      network: 'solana',
      claim_token: null,
    });
    // The same request on the paying network is still replayed by a fresh replica.
    expect(await new PrismaPaymentLedger(poolB).claim(request)).toMatchObject({
      outcome: 'replay',
      response: stored,
    });
  });

  it('When the replica holds the completed payment in memory and it is asked for another network, then other_endpoint from memory, not a replay', async () => {
    const statements: string[] = [];
    const counting: SqlClient = {
      $queryRawUnsafe: <T>(sql: string, ...values: unknown[]) => {
        statements.push(sql);
        return poolA.$queryRawUnsafe<T>(sql, ...values);
      },
      $executeRawUnsafe: (sql: string, ...values: unknown[]) => {
        statements.push(sql);
        return poolA.$executeRawUnsafe(sql, ...values);
      },
    };
    const ledger = new PrismaPaymentLedger(counting);
    const { request, stored } = await completedPayment(ledger);
    // A first replay reads the row and keeps the completed payment in memory.
    expect(await ledger.claim(request)).toMatchObject({ outcome: 'replay', response: stored });
    const before = statements.length;

    const elsewhere = await ledger.claim({ ...request, network: 'solana-devnet' });

    expect(elsewhere.outcome).toBe('other_endpoint');
    expect(elsewhere).not.toHaveProperty('response');
    // Answered from memory: no statement ran.
    expect(statements).toHaveLength(before);
    expect(await rowOf(request.signature)).toMatchObject({ status: 'completed', network: 'solana' });
  });
});
