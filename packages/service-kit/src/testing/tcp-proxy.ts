import { createServer, connect, type Server, type Socket } from 'node:net';

/** What the proxy does with connections: pass them on, refuse them (port closed), or accept and never answer. */
export type ProxyMode = 'forward' | 'refuse' | 'blackhole';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (PostgreSQL, RabbitMQ), so a test can make the
 * dependency disappear for one service without stopping it for everyone else.
 *
 * - {@link TcpProxy.cut}: destroys every open connection and closes the port (new connections are refused);
 * - {@link TcpProxy.blackhole}: destroys every open connection and accepts new ones without ever forwarding a byte
 *   (a dependency that hangs, for probe timeouts);
 * - {@link TcpProxy.restore}: forwards again on the same port.
 */
export class TcpProxy {
  private mode: ProxyMode = 'forward';
  private server: Server;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly target: { host: string; port: number },
    /** The local port clients connect to (stable across cut and restore). */
    readonly port: number,
    server: Server,
  ) {
    this.server = server;
  }

  /**
   * Starts a proxy to `target` on a free local port.
   * @param target host and port of the real server
   */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const holder: { proxy?: TcpProxy } = {};
    const server = createServer((socket) => holder.proxy?.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('proxy has no address');
    holder.proxy = new TcpProxy(target, address.port, server);
    return holder.proxy;
  }

  /**
   * Starts a proxy to the host and port of `url` (e.g. a `postgresql://` or `amqp://` URL).
   * @returns the proxy and `url` rewritten to go through it (credentials, path and query kept)
   */
  static async forUrl(url: string, defaultPort: number): Promise<{ proxy: TcpProxy; url: string }> {
    const parsed = new URL(url);
    const proxy = await TcpProxy.start({
      host: parsed.hostname,
      port: parsed.port ? Number(parsed.port) : defaultPort,
    });
    parsed.hostname = '127.0.0.1';
    parsed.port = String(proxy.port);
    return { proxy, url: parsed.toString() };
  }

  /** The current mode. */
  get current(): ProxyMode {
    return this.mode;
  }

  /** Number of client connections currently open through the proxy. */
  get connections(): number {
    return this.sockets.size;
  }

  /** Drops every connection and refuses new ones (the port is closed) until {@link TcpProxy.restore}. */
  async cut(): Promise<void> {
    this.mode = 'refuse';
    this.dropAll();
    if (this.server.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Drops every connection and accepts new ones without forwarding anything until {@link TcpProxy.restore}. */
  async blackhole(): Promise<void> {
    await this.listen();
    this.mode = 'blackhole';
    this.dropAll();
  }

  /**
   * Forwards connections again (on the same port). Connections held by a black hole are reset, as a
   * middlebox that lost their state would: their bytes never reached the server.
   */
  async restore(): Promise<void> {
    await this.listen();
    if (this.mode === 'blackhole') this.dropAll();
    this.mode = 'forward';
  }

  /** Drops every connection and closes the port for good. */
  async close(): Promise<void> {
    await this.cut();
  }

  private async listen(): Promise<void> {
    if (this.server.listening) return;
    const server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  private dropAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  private accept(client: Socket): void {
    if (this.mode === 'refuse') {
      client.destroy();
      return;
    }
    this.track(client);
    if (this.mode === 'blackhole') return;
    const upstream = connect(this.target.port, this.target.host);
    this.track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  }
}
