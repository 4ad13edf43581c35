import { Client } from 'pg';
import { backoffDelay, type BackoffPolicy } from './loop';

/** What {@link listenForNotifications} needs, and what it reports. */
export interface NotificationListenerOptions {
  /** The database the notifications are sent on. */
  databaseUrl: string;
  /**
   * The channel to `LISTEN` on: a plain lowercase SQL identifier (letters, digits, `_`), since it is
   * written into the statement.
   */
  channel: string;
  /** One notification on the channel, with its payload (`''` when none). */
  onNotification(payload: string): void;
  /**
   * `true` once `LISTEN` is active (at start and after every reconnection: whatever was sent while
   * the connection was down was missed, so the caller reads its state again), `false` from the moment
   * the connection is lost.
   */
  onListening(listening: boolean): void;
  /** Told of a lost connection or a failed reconnection (logged by the caller). */
  onError?(err: unknown): void;
  /** First wait before reconnecting, in milliseconds (default 500; doubles up to 30 000). */
  retryMs?: number;
}

/** A running listener (see {@link listenForNotifications}). */
export interface NotificationListener {
  /** Ends the connection and stops reconnecting. */
  close(): Promise<void>;
}

const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Hears every `pg_notify(channel, payload)` any process commits on a PostgreSQL database, on a
 * dedicated connection outside the pool. PostgreSQL delivers a notification only once its
 * transaction commits, and only to connections listening at that moment: while the connection is
 * down nothing is heard, so `onListening(false)` comes first and, once it is back, `onListening(true)`
 * tells the caller to read its state again. Reconnects with a doubling wait; never throws.
 * @throws Error at once when `channel` is not a plain lowercase identifier
 */
export function listenForNotifications(options: NotificationListenerOptions): NotificationListener {
  if (!CHANNEL.test(options.channel)) throw new Error(`invalid notification channel: ${options.channel}`);
  const backoff: BackoffPolicy = { initialDelayMs: options.retryMs ?? 500, maxDelayMs: 30_000 };
  let retries = 0;
  let closed = false;
  let client: Client | undefined;
  let timer: NodeJS.Timeout | undefined;

  const lost = (err: unknown): void => {
    if (closed) return;
    options.onListening(false);
    options.onError?.(err);
    const dead = client;
    client = undefined;
    dead?.end().catch(() => undefined);
    timer = setTimeout(connect, backoffDelay(backoff, retries));
    timer.unref();
    retries += 1;
  };

  function connect(): void {
    if (closed) return;
    const next = new Client({ connectionString: options.databaseUrl, connectionTimeoutMillis: 5000 });
    client = next;
    let failed = false;
    const fail = (err: unknown): void => {
      if (failed || client !== next) return;
      failed = true;
      lost(err);
    };
    next.on('error', fail);
    next.on('end', () => fail(new Error(`the ${options.channel} listener connection ended`)));
    next.on('notification', (message) => {
      if (message.channel === options.channel) options.onNotification(message.payload ?? '');
    });
    next
      .connect()
      .then(() => next.query(`LISTEN ${options.channel}`))
      .then(() => {
        if (closed || client !== next) return;
        retries = 0;
        options.onListening(true);
      })
      .catch(fail);
  }

  connect();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      options.onListening(false);
      const last = client;
      client = undefined;
      await last?.end().catch(() => undefined);
    },
  };
}
