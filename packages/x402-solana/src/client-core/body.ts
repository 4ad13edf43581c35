/**
 * The body of an answer as the paying clients report it (README "The client"): parsed JSON when the
 * `content-type` says JSON and it parses, else the text; `undefined` when the body is empty. Reads
 * the body (a `Response` can be read once).
 * @param response any fetch `Response`
 * @returns the parsed JSON value, the text, or `undefined`
 * @throws whatever `response.text()` throws (a body already read, a broken stream)
 */
export async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return undefined;
  if (/json/i.test(response.headers.get('content-type') ?? '')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}
