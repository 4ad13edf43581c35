import { SCOUT_WINDOW_MAX_ITEMS } from '@repo/compute';
import type { ScoutState } from '../domain/pipelines/scout';

/**
 * What market-intel does to a scan's state after step 0 (the scout contract in @repo/compute), for
 * runner tests without market-intel: `items` become the items published within `windowDays` before
 * `now`, newest first (then by hash), at most `SCOUT_WINDOW_MAX_ITEMS`, plus the earlier stored
 * items given; `newItems` counts this scan's items whose hash was not stored before.
 * @param state the state after step 0
 * @param windowDays the job input's window, in days
 * @param now the time the window ends at
 * @param stored items stored by earlier scans (default none)
 */
export function scoutWindow(
  state: ScoutState,
  windowDays: number,
  now: Date,
  stored: ScoutState['items'] = [],
): ScoutState {
  const known = new Set(stored.map((i) => i.hash));
  const all = [...stored, ...state.items.filter((i) => !known.has(i.hash))];
  const from = now.getTime() - windowDays * 86_400_000;
  const items = all
    .filter((i) => Date.parse(i.publishedAt) >= from)
    .sort((a, b) => Date.parse(b.publishedAt) - Date.parse(a.publishedAt) || (a.hash < b.hash ? -1 : 1))
    .slice(0, SCOUT_WINDOW_MAX_ITEMS);
  return { ...state, items, newItems: state.items.filter((i) => !known.has(i.hash)).length };
}
