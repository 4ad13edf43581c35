import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import amqplib, {
  type Channel,
  type ChannelModel,
  type ConfirmChannel,
  type ConsumeMessage,
  type Options,
  type RecoveringChannelModel,
  type RecoveryOptions,
} from 'amqplib';
import { backoffDelay, withJitter } from '@repo/service-kit';

/** The logging surface the broker needs (a pino logger satisfies it). */
export interface QueueLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Declares exchanges, queues and bindings on a fresh channel; run after every (re)connect. */
export type TopologySetup = (channel: Channel) => Promise<void>;

/** Options of {@link Broker.connect}. */
export interface BrokerOptions {
  /** AMQP URL, e.g. `amqp://guest:guest@127.0.0.1:5672`. */
  url: string;
  /** Shown in the RabbitMQ management UI as the connection name. */
  connectionName: string;
  logger: QueueLogger;
  /** Declares the topology this process uses (idempotent `assert*` calls). */
  topology?: TopologySetup;
  /**
   * First reconnect delay in milliseconds (default 200); doubles per attempt up to
   * `reconnectMaxDelayMs`, each delay spread by ± 20 % ({@link reconnectDelay}).
   */
  reconnectInitialDelayMs?: number;
  /** Longest reconnect delay in milliseconds (default 10 000). */
  reconnectMaxDelayMs?: number;
  /** How long {@link Broker.publish} waits for a connection before failing, in milliseconds (default 10 000). */
  publishTimeoutMs?: number;
  /** AMQP heartbeat in seconds (default 10), so a dead broker is noticed. */
  heartbeatSeconds?: number;
}

/** How a handler wants its delivery settled. */
export type Settlement = 'ack' | 'requeue' | 'reject';

/** One delivery as a handler sees it: the parsed JSON body and the AMQP metadata that matters. */
export interface Delivery {
  /** The body parsed as JSON, or `undefined` when it is not JSON (the handler decides: usually `reject`). */
  body: unknown;
  raw: Buffer;
  routingKey: string;
  exchange: string;
  messageId: string | undefined;
  type: string | undefined;
  headers: Record<string, unknown>;
  /** Whether RabbitMQ delivered this message before (crash, nack). */
  redelivered: boolean;
  /** How many times a quorum queue returned it before (`x-delivery-count`, 0 on first delivery). */
  deliveryCount: number;
}

/** Options of {@link Broker.consume}. */
export interface ConsumeOptions {
  /** Unacknowledged deliveries this consumer holds at once (AMQP prefetch). */
  prefetch: number;
  /** Called when a handler throws: the delivery is requeued (and eventually dead-lettered by the queue's delivery limit). */
  onError?: (error: unknown, delivery: Delivery) => void;
}

/** A handler settles each delivery by what it returns; a throw requeues. */
export type DeliveryHandler = (delivery: Delivery) => Promise<Settlement>;

/**
 * Thrown by {@link Broker.publish} when the broker is unreachable past the timeout, refuses the
 * message (nack), or returns a mandatory message no queue would receive (`unroutable`).
 */
export class PublishError extends Error {
  /** `true` when the message was returned as unroutable (no queue bound for its routing key). */
  readonly unroutable: boolean;
  /** @param message what failed @param options the cause, and whether it was unroutable */
  constructor(message: string, options?: { cause?: unknown; unroutable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'PublishError';
    this.unroutable = options?.unroutable ?? false;
  }
}

/** Options of {@link Broker.publish}. */
export interface PublishOptions {
  /** Idempotency key consumers can use; defaults to a random UUID. */
  messageId?: string;
  /** AMQP `type` property (the event or command name). */
  type?: string;
  headers?: Record<string, unknown>;
  /** Persistent (delivery mode 2) unless false (heartbeats are transient). */
  persistent?: boolean;
  /** Per-message TTL in milliseconds. */
  expirationMs?: number;
  /**
   * Refuse a message no queue would receive (AMQP `mandatory`): the broker returns it and
   * {@link Broker.publish} throws instead of resolving. Default true; off for transient messages
   * nobody may be listening to (heartbeats).
   */
  mandatory?: boolean;
}

/** Header carrying a per-publish id, so a returned (unroutable) message is matched to its publish. */
const PUBLISH_ID_HEADER = 'x-publish-id';

interface ConsumerRegistration {
  queue: string;
  handler: DeliveryHandler;
  options: ConsumeOptions;
  channel: Channel | null;
  consumerTag: string | null;
}

/** Spread of each reconnect delay, as a fraction of it. */
const RECONNECT_JITTER = 0.2;

/**
 * The wait before reconnect attempt `attempt` (1 for the first), in milliseconds: the workspace's
 * backoff ({@link backoffDelay}) from `initialDelayMs`, spread by ± 20 %, never beyond
 * `maxDelayMs` (the doubling stops at `maxDelayMs / 1.2`, so the spread stays even up to the cap, as
 * amqplib's own recovery delay does).
 * @param policy the first and the longest delay, in milliseconds
 * @param attempt the reconnect attempt, from 1
 */
export function reconnectDelay(
  policy: { initialDelayMs: number; maxDelayMs: number },
  attempt: number,
): number {
  const base = backoffDelay(
    { initialDelayMs: policy.initialDelayMs, maxDelayMs: policy.maxDelayMs / (1 + RECONNECT_JITTER) },
    attempt - 1,
  );
  return Math.max(0, withJitter(base, RECONNECT_JITTER));
}

/**
 * A RabbitMQ client for a whole process: one recovering connection (amqplib's recovery, waiting
 * {@link reconnectDelay} between attempts), one confirm channel for publishing, one channel per consumer. After every
 * reconnect it re-declares the topology and re-creates the consumers, so callers register once.
 *
 * Events: `connect`, `disconnect` (with the error).
 */
export class Broker extends EventEmitter {
  private connected = false;
  private closing = false;
  private publishChannel: ConfirmChannel | null = null;
  /** Publish ids of mandatory messages the broker returned as unroutable, until their publish reads them. */
  private readonly returned = new Set<string>();
  private readonly consumers: ConsumerRegistration[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly waiters: Array<() => void> = [];

  private constructor(
    private readonly options: BrokerOptions,
    private connection: RecoveringChannelModel | null = null,
  ) {
    super();
  }

  /**
   * Opens the connection (returns at once; the first connection is made in the background with the
   * same backoff as reconnects). Use {@link Broker.waitForConnection} to wait for it.
   */
  static async connect(options: BrokerOptions): Promise<Broker> {
    const broker = new Broker(options);
    const initialDelayMs = options.reconnectInitialDelayMs ?? 200;
    const backoff = {
      initialDelayMs,
      maxDelayMs: Math.max(initialDelayMs, options.reconnectMaxDelayMs ?? 10_000),
    };
    const recovery: RecoveryOptions = {
      calculateDelay: (attempt) => reconnectDelay(backoff, attempt),
      waitForConnect: false,
      setup: (model: ChannelModel) => broker.setup(model),
    };
    const url = new URL(options.url);
    if (!url.searchParams.has('heartbeat'))
      url.searchParams.set('heartbeat', String(options.heartbeatSeconds ?? 10));
    const connection = await amqplib.connect(url.toString(), {
      clientProperties: { connection_name: options.connectionName },
      recovery,
    });
    broker.connection = connection;
    connection.on('connect', () => broker.onConnect());
    connection.on('disconnect', (err: Error) => broker.onDisconnect(err));
    connection.on('reconnect-scheduled', (info: { attempt: number; delay: number; error: Error }) =>
      options.logger.warn(
        { attempt: info.attempt, delayMs: info.delay, err: info.error.message },
        'RabbitMQ reconnect scheduled',
      ),
    );
    connection.on('error', (err: Error) =>
      options.logger.warn({ err: err.message }, 'RabbitMQ connection error'),
    );
    return broker;
  }

  /** Whether a connection is up with its channels ready (readiness probes use this). */
  isConnected(): boolean {
    return this.connected;
  }

  /**
   * Resolves once connected.
   * @param timeoutMs how long to wait, in milliseconds
   * @throws PublishError when not connected within `timeoutMs`
   */
  async waitForConnection(timeoutMs = this.options.publishTimeoutMs ?? 10_000): Promise<void> {
    if (this.connected) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        const index = this.waiters.indexOf(done);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new PublishError(`RabbitMQ not reachable within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      this.waiters.push(done);
    });
  }

  /**
   * Publishes one JSON message and resolves when the broker has confirmed it (publisher confirm)
   * and, unless `mandatory: false`, routed it to at least one queue. Waits for a connection when the
   * broker is away; a channel lost before the confirm is retried on the next connection, so a message
   * may arrive twice (consumers are idempotent by `messageId`).
   * @throws PublishError when no connection comes within the publish timeout, the broker nacks, or a
   *   mandatory message could not be routed (`unroutable: true`)
   */
  async publish(
    exchange: string,
    routingKey: string,
    body: unknown,
    options: PublishOptions = {},
  ): Promise<void> {
    const content = Buffer.from(JSON.stringify(body));
    const mandatory = options.mandatory ?? true;
    const publishId = randomUUID();
    const publishOptions: Options.Publish = {
      contentType: 'application/json',
      persistent: options.persistent ?? true,
      messageId: options.messageId ?? randomUUID(),
      timestamp: Math.floor(Date.now() / 1000),
      mandatory,
      ...(options.type ? { type: options.type } : {}),
      headers: { ...options.headers, ...(mandatory ? { [PUBLISH_ID_HEADER]: publishId } : {}) },
      ...(options.expirationMs !== undefined ? { expiration: String(options.expirationMs) } : {}),
    };
    const deadline = Date.now() + (this.options.publishTimeoutMs ?? 10_000);
    let lastError: unknown;
    while (Date.now() < deadline) {
      // While closing, handlers still draining may publish their outcome until the connection goes.
      if (this.closing && !this.connected) throw new PublishError('broker is closing');
      await this.waitForConnection(Math.max(1, deadline - Date.now()));
      const channel = this.publishChannel;
      if (!channel) continue;
      try {
        await new Promise<void>((resolve, reject) => {
          channel.publish(exchange, routingKey, content, publishOptions, (err: unknown) =>
            err ? reject(err) : resolve(),
          );
        });
        // The broker sends basic.return before the confirm of an unroutable mandatory message.
        if (this.returned.delete(publishId)) {
          throw new PublishError(
            `no queue is bound for ${exchange}/${routingKey}: the message was returned`,
            {
              unroutable: true,
            },
          );
        }
        return;
      } catch (err) {
        if (err instanceof PublishError) throw err;
        lastError = err;
        // A nack is final; a closed channel is retried once the connection is back.
        if (this.connected && this.publishChannel === channel)
          throw new PublishError(`RabbitMQ refused the message to ${exchange}/${routingKey}`, { cause: err });
      }
    }
    throw new PublishError(`could not publish to ${exchange}/${routingKey} before the timeout`, {
      cause: lastError,
    });
  }

  /**
   * Registers a consumer for `queue`; it is (re)started on every connection. Each delivery is given
   * to `handler`; its return value settles it (`ack`, `requeue` = nack with requeue, `reject` = nack
   * without requeue, i.e. dead-lettered when the queue has a dead-letter exchange).
   */
  async consume(queue: string, handler: DeliveryHandler, options: ConsumeOptions): Promise<void> {
    const registration: ConsumerRegistration = { queue, handler, options, channel: null, consumerTag: null };
    this.consumers.push(registration);
    if (this.connected && this.connection) {
      const channel = await this.connection.createChannel();
      await this.startConsumer(channel, registration);
    }
  }

  /** Runs `fn` on a short-lived channel (queue inspection in tests and admin commands). */
  async withChannel<T>(fn: (channel: Channel) => Promise<T>): Promise<T> {
    await this.waitForConnection();
    if (!this.connection) throw new PublishError('broker is closed');
    const channel = await this.connection.createChannel();
    try {
      return await fn(channel);
    } finally {
      await channel.close().catch(() => undefined);
    }
  }

  /**
   * Stops consuming (cancels every consumer), waits up to `drainMs` milliseconds for handlers in
   * progress to settle their deliveries (they may still publish meanwhile), then closes the channels
   * and the connection. Deliveries not settled by then return to their queue.
   */
  async close(drainMs = 10_000): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const consumer of this.consumers) {
      if (consumer.channel && consumer.consumerTag)
        await consumer.channel.cancel(consumer.consumerTag).catch(() => undefined);
    }
    const drained = Promise.allSettled([...this.inFlight]);
    await Promise.race([drained, new Promise((resolve) => setTimeout(resolve, drainMs).unref())]);
    // Closing each channel first (it waits for CloseOk) makes RabbitMQ take the acks already sent on
    // it; a connection close alone can overtake acks still buffered for other channels.
    for (const consumer of this.consumers) await consumer.channel?.close().catch(() => undefined);
    await this.publishChannel?.close().catch(() => undefined);
    this.connected = false;
    await this.connection?.close().catch(() => undefined);
    this.connection = null;
  }

  private async setup(model: ChannelModel): Promise<void> {
    if (this.options.topology) {
      const channel = await model.createChannel();
      try {
        await this.options.topology(channel);
      } finally {
        await channel.close().catch(() => undefined);
      }
    }
    const confirm = await model.createConfirmChannel();
    confirm.on('error', (err: Error) =>
      this.options.logger.warn({ err: err.message }, 'RabbitMQ publish channel error'),
    );
    confirm.on('return', (message: { properties: { headers?: Record<string, unknown> } }) => {
      const id = message.properties.headers?.[PUBLISH_ID_HEADER];
      if (typeof id === 'string') this.returned.add(id);
    });
    this.publishChannel = confirm;
    for (const registration of this.consumers) {
      if (this.closing) break;
      await this.startConsumer(await model.createChannel(), registration);
    }
  }

  private async startConsumer(channel: Channel, registration: ConsumerRegistration): Promise<void> {
    channel.on('error', (err: Error) =>
      this.options.logger.warn(
        { err: err.message, queue: registration.queue },
        'RabbitMQ consumer channel error',
      ),
    );
    await channel.prefetch(registration.options.prefetch);
    registration.channel = channel;
    const reply = await channel.consume(registration.queue, (message) => {
      if (!message) return; // cancelled by the broker (queue deleted); the next connection re-creates it
      const work = this.handle(channel, registration, message);
      this.inFlight.add(work);
      void work.finally(() => this.inFlight.delete(work));
    });
    registration.consumerTag = reply.consumerTag;
  }

  private async handle(
    channel: Channel,
    registration: ConsumerRegistration,
    message: ConsumeMessage,
  ): Promise<void> {
    const delivery = toDelivery(message);
    let settlement: Settlement;
    try {
      settlement = await registration.handler(delivery);
    } catch (error) {
      registration.options.onError?.(error, delivery);
      settlement = 'requeue';
    }
    try {
      if (settlement === 'ack') channel.ack(message);
      else channel.nack(message, false, settlement === 'requeue');
    } catch {
      // The channel closed while the handler ran: RabbitMQ redelivers the message on the next connection.
    }
  }

  private onConnect(): void {
    this.connected = true;
    this.options.logger.info({ connection: this.options.connectionName }, 'RabbitMQ connected');
    for (const waiter of this.waiters.splice(0)) waiter();
    this.emit('connect');
  }

  private onDisconnect(err: Error): void {
    this.connected = false;
    this.publishChannel = null;
    for (const consumer of this.consumers) {
      consumer.channel = null;
      consumer.consumerTag = null;
    }
    if (!this.closing) this.options.logger.warn({ err: err.message }, 'RabbitMQ connection lost');
    this.emit('disconnect', err);
  }
}

function toDelivery(message: ConsumeMessage): Delivery {
  let body: unknown;
  try {
    body = JSON.parse(message.content.toString('utf8'));
  } catch {
    body = undefined;
  }
  const headers = (message.properties.headers ?? {}) as Record<string, unknown>;
  const count = headers['x-delivery-count'];
  return {
    body,
    raw: message.content,
    routingKey: message.fields.routingKey,
    exchange: message.fields.exchange,
    messageId: typeof message.properties.messageId === 'string' ? message.properties.messageId : undefined,
    type: typeof message.properties.type === 'string' ? message.properties.type : undefined,
    headers,
    redelivered: message.fields.redelivered,
    deliveryCount: typeof count === 'number' ? count : Number(count ?? 0) || 0,
  };
}
