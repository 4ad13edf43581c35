import type { Db } from './prisma';
import type { PlanName } from '../schemas/accounts';

/** A user as the routes see it. */
export interface UserRecord {
  id: string;
  email: string;
  plan: PlanName;
  createdAt: Date;
}

/** A live session with its user. */
export interface SessionRecord {
  tokenHash: string;
  csrfToken: string;
  expiresAt: Date;
  user: UserRecord;
}

/** Usage of one user in one month. */
export interface UsageRecord {
  signals: number;
  proposals: number;
  deployments: number;
  products: number;
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'P2002';
}

/** Users, sessions and monthly usage (the only code touching those tables). */
export class AccountRepository {
  /** @param db the Prisma client */
  constructor(private readonly db: Db) {}

  /**
   * Creates a user on the Free plan.
   * @returns the user, or undefined when the e-mail is taken
   */
  async createUser(email: string, passwordHash: string): Promise<UserRecord | undefined> {
    try {
      const u = await this.db.user.create({ data: { email, passwordHash } });
      return { id: u.id, email: u.email, plan: u.plan, createdAt: u.createdAt };
    } catch (err) {
      if (isUniqueViolation(err)) return undefined;
      throw err;
    }
  }

  /** A user and their password hash by (lower-cased) e-mail. */
  async findByEmail(email: string): Promise<(UserRecord & { passwordHash: string }) | undefined> {
    const u = await this.db.user.findUnique({ where: { email } });
    return u
      ? { id: u.id, email: u.email, plan: u.plan, createdAt: u.createdAt, passwordHash: u.passwordHash }
      : undefined;
  }

  /**
   * Sets a user's plan (admin command).
   * @returns false when no user has that e-mail
   */
  async setPlan(email: string, plan: PlanName): Promise<boolean> {
    const r = await this.db.user.updateMany({ where: { email }, data: { plan } });
    return r.count === 1;
  }

  /** Stores a session (the token's hash only). */
  async createSession(args: {
    tokenHash: string;
    userId: string;
    csrfToken: string;
    expiresAt: Date;
  }): Promise<void> {
    await this.db.session.create({ data: args });
  }

  /** The unexpired session with this token hash, with its user. */
  async findSession(tokenHash: string, now: Date): Promise<SessionRecord | undefined> {
    const s = await this.db.session.findUnique({ where: { tokenHash }, include: { user: true } });
    if (!s || s.expiresAt <= now) return undefined;
    // Activity is recorded at most every 5 minutes, off the request's path.
    if (now.getTime() - s.lastSeenAt.getTime() > 5 * 60_000) {
      this.db.session.updateMany({ where: { tokenHash }, data: { lastSeenAt: now } }).catch(() => undefined);
    }
    return {
      tokenHash: s.tokenHash,
      csrfToken: s.csrfToken,
      expiresAt: s.expiresAt,
      user: { id: s.user.id, email: s.user.email, plan: s.user.plan, createdAt: s.user.createdAt },
    };
  }

  /** Deletes a session (log-out). */
  async deleteSession(tokenHash: string): Promise<void> {
    await this.db.session.deleteMany({ where: { tokenHash } });
  }

  /** Deletes expired sessions; returns how many. */
  async deleteExpiredSessions(now: Date): Promise<number> {
    return (await this.db.session.deleteMany({ where: { expiresAt: { lte: now } } })).count;
  }

  /** Signals, proposals and deployments counted this month and products owned. */
  async usage(userId: string, month: string): Promise<UsageRecord> {
    const [counter, products] = await Promise.all([
      this.db.usageCounter.findUnique({
        where: { userId_month: { userId, month: new Date(`${month}T00:00:00Z`) } },
      }),
      this.db.product.count({ where: { userId } }),
    ]);
    return {
      signals: counter?.signals ?? 0,
      proposals: counter?.proposals ?? 0,
      deployments: counter?.deployments ?? 0,
      products,
    };
  }
}
