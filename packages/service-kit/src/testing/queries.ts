import { Client } from 'pg';

/**
 * Runs `run` and collects the text of every query any `pg` client of this process sends meanwhile
 * (whitespace collapsed), by wrapping `Client.prototype.query`: the queries are counted, never
 * replaced. Queries of other work running at the same time are collected too.
 * @returns what `run` returned and the queries, in the order they were sent
 * @throws whatever `run` throws (the wrapper is removed either way)
 */
export async function countQueries<T>(run: () => Promise<T>): Promise<{ result: T; queries: string[] }> {
  const queries: string[] = [];
  const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0];
    const text = typeof first === 'string' ? first : (first as { text?: string } | undefined)?.text;
    queries.push((text ?? '').replace(/\s+/g, ' '));
    return original.apply(this, args);
  };
  try {
    return { result: await run(), queries };
  } finally {
    proto.query = original;
  }
}
