/** A named dependency check for `/readyz`: resolves `true` when the dependency is usable. */
export type ReadinessCheck = () => boolean | Promise<boolean>;

/** A service's readiness: its dependency checks and the shutting-down flag. */
export interface Readiness {
  /** `false` once shutting down, otherwise `true` when every check answers `true` (a throw is `false`). */
  isReady(): Promise<boolean>;
  /** Turns readiness false for good, ahead of draining the HTTP port. */
  markShuttingDown(): void;
  /** Whether {@link Readiness.markShuttingDown} was called. */
  readonly shuttingDown: boolean;
}

/**
 * The one readiness helper (docs/architecture.md, "Runtime"): `/readyz` is ready while not shutting
 * down and every check passes, e.g. `{ database: db.ping, broker: () => broker.isConnected() }`.
 * Checks run concurrently; `createBaseApp` bounds the whole answer with its `readyTimeoutMs`.
 * @param checks named checks (the names document what readiness waits for)
 */
export function createReadiness(checks: Record<string, ReadinessCheck> = {}): Readiness {
  let shuttingDown = false;
  const list = Object.values(checks);
  return {
    async isReady() {
      if (shuttingDown) return false;
      const answers = await Promise.all(
        list.map((check) =>
          Promise.resolve()
            .then(check)
            .then(Boolean, () => false),
        ),
      );
      return !shuttingDown && answers.every(Boolean);
    },
    markShuttingDown() {
      shuttingDown = true;
    },
    get shuttingDown() {
      return shuttingDown;
    },
  };
}
