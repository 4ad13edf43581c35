import type { PrismaDb } from './prisma';

/** What a payment proof for a skill must pay: its price and where. */
export interface PaymentTarget {
  /** USD per call. */
  priceUsd: number;
  /** The skill's Solana USDC token account (base58), or `null` when it declares none. */
  payTo: string | null;
}

/** How a claim of a payment signature went: `claimed` (go on and check it), `used`, or `busy`. */
export type ClaimOutcome = 'claimed' | 'used' | 'busy';

/** A claim not finished within this time (a crashed or stalled check) may be taken over. */
const CLAIM_LEASE = `interval '60 seconds'`;

/**
 * Payment signatures offered with call reports (`report_payments`): claimed before the chain is
 * asked, recorded with payer and amount once verified, deleted when the check refuses them.
 */
export class ReportPayments {
  constructor(private readonly prisma: PrismaDb) {}

  /** The skill's price and `pay_to`, or `null` for an unknown skill. */
  async target(skillId: string): Promise<PaymentTarget | null> {
    const skill = await this.prisma.skill.findUnique({
      where: { skillId },
      select: { priceUsd: true, payTo: true },
    });
    return skill ? { priceUsd: skill.priceUsd, payTo: skill.payTo } : null;
  }

  /**
   * Claims `signature` for one report, atomically across replicas: a new signature, or a claim older
   * than the lease (its check died), is `claimed`; a verified one is `used`; one another request is
   * checking now is `busy`.
   * @param input.amountAtomic the price in atomic USDC units (recorded once verified)
   */
  async claim(input: {
    signature: string;
    network: string;
    skillId: string;
    apiKeyId: string;
    amountAtomic: bigint;
  }): Promise<ClaimOutcome> {
    const taken = await this.prisma.$queryRawUnsafe<{ signature: string }[]>(
      `INSERT INTO report_payments (signature, network, skill_id, api_key_id, status)
       VALUES ($1, $2, $3, $4::uuid, 'claimed')
       ON CONFLICT (signature) DO UPDATE SET network = EXCLUDED.network, skill_id = EXCLUDED.skill_id,
         api_key_id = EXCLUDED.api_key_id, claimed_at = now()
        WHERE report_payments.status = 'claimed' AND report_payments.claimed_at < now() - ${CLAIM_LEASE}
       RETURNING signature`,
      input.signature,
      input.network,
      input.skillId,
      input.apiKeyId,
    );
    if (taken.length > 0) return 'claimed';
    const existing = await this.prisma.reportPayment.findUnique({
      where: { signature: input.signature },
      select: { status: true },
    });
    // Released between the two statements: the caller may simply try again.
    if (!existing) return 'busy';
    return existing.status === 'verified' ? 'used' : 'busy';
  }

  /** Records a claimed signature as verified, with the paying wallet and the amount (atomic USDC). */
  async markVerified(signature: string, payer: string, amountAtomic: bigint): Promise<void> {
    await this.prisma.reportPayment.update({
      where: { signature },
      data: { status: 'verified', payer, amountAtomic, verifiedAt: new Date() },
    });
  }

  /** Forgets a claim whose check refused the payment (or failed), so the signature can be offered again. */
  async release(signature: string): Promise<void> {
    await this.prisma.reportPayment.deleteMany({ where: { signature, status: 'claimed' } });
  }
}
