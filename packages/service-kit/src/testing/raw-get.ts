import { request, type IncomingHttpHeaders } from 'node:http';

/** An HTTP answer as received: status, headers (lower-case names) and the body as UTF-8 text. */
export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A GET of `path` on 127.0.0.1:`port` exactly as given: no URL parsing, so dot segments, odd
 * encodings and a Host header of the test's choosing reach the server as written (which
 * `fetch` and supertest would normalise).
 * @param path the request target, ASCII (Node refuses other characters in it)
 * @param headers request headers, sent as given
 * @throws Error when the connection fails
 */
export function rawGet(port: number, path: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
