// The live table of the latest signals: read every few seconds while the page is visible and signed in.
/* global document */
import { api, state } from './api.js';
import { $, el } from './dom.js';
import { dateTime } from './format.js';

const POLL_MS = 5_000;
const ROWS = 20;
let timer = null;
let seen = new Set();

/** Starts (or restarts) the polling; the first read is at once. */
export function startLatest() {
  stopLatest();
  seen = new Set();
  void tick();
}

/** Stops the polling (signed out). */
export function stopLatest() {
  if (timer !== null) clearTimeout(timer);
  timer = null;
}

async function tick() {
  timer = null;
  if (!state.me) return;
  try {
    if (document.visibilityState === 'visible') await refreshLatest();
    $('latest-status').textContent = 'live';
    $('latest-status').className = 'hint live';
  } catch (err) {
    if (err.status === 401) return;
    $('latest-status').textContent = `paused: ${err.message}`;
    $('latest-status').className = 'hint error';
  }
  if (state.me && timer === null) timer = setTimeout(tick, POLL_MS);
}

/** A client may date a signal in the past: beyond this gap its own time is shown under its receipt time. */
const BACKDATED_MS = 60_000;

/** When the signal arrived (the table's order), and its own time when the client dated it earlier. */
function receivedCell(s) {
  const received = Date.parse(s.received_at);
  const own = Date.parse(s.created_at);
  if (Math.abs(received - own) < BACKDATED_MS) return el('td', { class: 'nowrap' }, dateTime(received));
  return el(
    'td',
    { class: 'nowrap' },
    dateTime(received),
    el(
      'div',
      { class: 'hint signal-time', title: "The signal's own time, sent by the client" },
      `dated ${dateTime(own)}`,
    ),
  );
}

/** Reads the latest signals, last received first, and fills the table; rows not shown before are marked new. */
export async function refreshLatest() {
  const rows = await api('GET', `/api/dashboard/signals?limit=${ROWS}`);
  const contextName = (id) => (state.contexts.find((c) => c.id === id) || {}).name;
  const first = seen.size === 0;
  const body = $('latest').tBodies[0];
  if (rows.length === 0) {
    body.replaceChildren(
      el(
        'tr',
        {},
        el(
          'td',
          { colspan: '4', class: 'empty' },
          'No signal yet. Send one with the snippet shown after creating a product.',
        ),
      ),
    );
    return;
  }
  body.replaceChildren(
    ...rows.map((s) =>
      el(
        'tr',
        { class: first || seen.has(s.id) ? '' : 'new', dataset: { signalId: s.id, sentiment: s.sentiment } },
        receivedCell(s),
        el('td', {}, el('span', { class: `type ${s.sentiment}` }, s.type)),
        el(
          'td',
          {},
          s.context_id
            ? contextName(s.context_id) || 'context'
            : el(
                'span',
                { class: 'warn', title: 'Signals without a context are never analysed' },
                'no context',
              ),
        ),
        el('td', { class: 'payload' }, s.payload_preview ?? ''),
      ),
    ),
  );
  seen = new Set(rows.map((s) => s.id));
}
