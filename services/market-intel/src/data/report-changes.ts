import { listenForNotifications } from '@repo/service-kit';
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
  return listenForNotifications({
    databaseUrl: options.databaseUrl,
    channel: REPORTS_CHANNEL,
    retryMs: options.retryMs,
    onError: options.onError,
    onNotification: () => options.onChange(),
    onListening: (listening) => {
      if (listening) options.onChange();
      options.onListening(listening);
    },
  });
}
