// @node-rs/argon2 ships prebuilt N-API binaries per platform and hashes argon2id by default.
import { hash, verify } from '@node-rs/argon2';

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
    return hash(password, {
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
      await verify(await this.dummy, password).catch(() => false);
      return false;
    }
    return verify(stored, password).catch(() => false);
  }
}
