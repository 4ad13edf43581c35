import { Client } from 'pg';
import { REPORTS_CHANNEL } from './reports';

/** What {@link listenForReportChanges} reports, and what it needs. */
export interface ReportChangeListenerOptions {
  /** market-intel's database (the same one the reports are stored in). */
  databaseUrl: string;
  /** A report was stored somewhere, or changes may have been missed (after a reconnection). */
  onChange(): void;
  /** `true` while changes are heard (LISTEN active), `false` from the moment the connection is lost. */
  onListening(listening: boolean): void;
  /** Told of a lost connection or a failed reconnection (logged by the caller). */
  onError?(err: unknown): void;
  /** First wait before reconnecting, in milliseconds (default 500; doubles up to 30 000). */
  retryMs?: number;
}

/** A running listener (see {@link listenForReportChanges}). */
export interface ReportChangeListener {
  /** Ends the connection and stops reconnecting. */
  close(): Promise<void>;
}

/**
 * Hears every stored report of every process on market-intel's database: a dedicated connection
 * `LISTEN`s on {@link REPORTS_CHANNEL}, which `ReportRepository.importReport` notifies when its
 * insert commits. While the connection is down nothing is heard, so `onListening(false)` comes first
 * (the caller stops trusting its cache) and, once it is back, `onChange()` then `onListening(true)`
 * (whatever was stored meanwhile is read again). Reconnects with a doubling wait; never throws.
 */
export function listenForReportChanges(options: ReportChangeListenerOptions): ReportChangeListener {
  const firstWait = options.retryMs ?? 500;
  let wait = firstWait;
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
    timer = setTimeout(connect, wait);
    timer.unref();
    wait = Math.min(wait * 2, 30_000);
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
    next.on('end', () => fail(new Error('the report change listener connection ended')));
    next.on('notification', (message) => {
      if (message.channel === REPORTS_CHANNEL) options.onChange();
    });
    next
      .connect()
      .then(() => next.query(`LISTEN ${REPORTS_CHANNEL}`))
      .then(() => {
        if (closed || client !== next) return;
        wait = firstWait;
        options.onChange();
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
