// The service's own JSON API, called with the session cookie; every write sends the session's CSRF
// token in x-csrf-token.

/** What the dashboard last read from the API; `me` is null while signed out. */
export const state = { me: null, products: [], contexts: [], proposals: [], deployments: new Map() };

/**
 * Calls the API and returns its JSON answer (null for 204).
 * @throws Error with the envelope's `error` message and the HTTP `status` when the answer is not 2xx
 */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && state.me) headers['x-csrf-token'] = state.me.csrf_token;
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error((data && data.error) || `HTTP ${res.status}`);
    err.status = res.status;
    throw err;
  }
  return data;
}
