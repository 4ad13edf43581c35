import {
  createLoop,
  listenForNotifications,
  type Logger,
  type Loop,
  type LoopMetrics,
} from '@repo/service-kit';
import { ROUTING_CHANNEL } from '../../data/routing-rows';
import type { RoutingIndexSync } from '../../domain/routing-sync';

/** Settings of {@link createRoutingIndexWorker}. */
export interface RoutingIndexWorkerOptions {
  /** The directory's database (the listener's own connection). */
  databaseUrl: string;
  /** Milliseconds between watermark checks. */
  intervalMs: number;
  /** First wait before the listener reconnects, in milliseconds. */
  retryMs?: number;
  /** Series of the shared loop metrics (`background_loop_*{loop="routing-index"}`). */
  loopMetrics?: LoopMetrics;
}

/**
 * Keeps the replica's routing index current (README, "Routing and the score"): on start, a
 * connection `LISTEN`s on `skill_router_routing` (each notification re-reads one skill; every
 * (re)connection loads the index in full) and a loop runs the watermark check every `intervalMs`.
 * Every replica runs it, workers enabled or not. Stopping closes the connection and the loop; the
 * index then stops being current and routes go to PostgreSQL.
 */
export function createRoutingIndexWorker(
  deps: { sync: RoutingIndexSync; logger: Logger },
  options: RoutingIndexWorkerOptions,
): Loop {
  const loop = createLoop({
    name: 'routing-index',
    intervalMs: options.intervalMs,
    logger: deps.logger,
    metrics: options.loopMetrics,
    round: () => deps.sync.check().then(() => false),
  });
  let listener: ReturnType<typeof listenForNotifications> | undefined;
  let stopped = false;
  return {
    name: loop.name,
    start() {
      if (listener || stopped) return;
      listener = listenForNotifications({
        databaseUrl: options.databaseUrl,
        channel: ROUTING_CHANNEL,
        retryMs: options.retryMs,
        onNotification: (skillId) => deps.sync.notified(skillId),
        onListening: (listening) => deps.sync.listeningChanged(listening),
        onError: (err) =>
          deps.logger.warn(
            { err },
            'routing change listener lost its connection: routes are ranked in PostgreSQL until it is back',
          ),
      });
      loop.start();
    },
    async stop() {
      stopped = true;
      await listener?.close();
      await loop.stop();
    },
    kick: () => loop.kick(),
  };
}
