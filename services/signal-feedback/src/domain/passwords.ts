import argon2 from 'argon2';

/** argon2id cost parameters. */
export interface PasswordCost {
  /** Memory in KiB. */
  memoryKib: number;
  /** Iterations. */
  timeCost: number;
}

/** Hashes and verifies passwords with argon2id (PHC string format). */
export class PasswordHasher {
  /** A valid hash of a random password, verified against when the e-mail is unknown (equal timing). */
  private dummy: Promise<string> | undefined;

  /** @param cost argon2id memory (KiB) and iterations */
  constructor(private readonly cost: PasswordCost) {}

  /** The argon2id PHC string of `password` (random 16-byte salt). */
  hash(password: string): Promise<string> {
    return argon2.hash(password, {
      type: argon2.argon2id,
      memoryCost: this.cost.memoryKib,
      timeCost: this.cost.timeCost,
      parallelism: 1,
    });
  }

  /**
   * Verifies a password; with no stored hash (unknown user) it still spends the same time and returns false.
   * @param stored the PHC string, or undefined
   */
  async verify(stored: string | undefined, password: string): Promise<boolean> {
    if (!stored) {
      this.dummy ??= this.hash(`dummy-${Math.random()}`);
      await argon2.verify(await this.dummy, password).catch(() => false);
      return false;
    }
    return argon2.verify(stored, password).catch(() => false);
  }
}
