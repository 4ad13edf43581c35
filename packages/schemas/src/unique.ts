import type { z } from 'zod';

/**
 * Adds an issue to `ctx` for each element of `items` whose `key` repeats an earlier one, at
 * `[listPath, index, key]` with the message `<label> "<value>" appears twice` (for `superRefine`).
 * @param items the list checked
 * @param key the field that must be unique, holding a string
 * @param label how the field is named in the message, e.g. `source id`
 * @param listPath the list's field name in the object refined
 */
export function addDuplicateIssues<T extends Record<K, string>, K extends string>(
  items: readonly T[],
  key: K,
  label: string,
  listPath: string,
  ctx: z.RefinementCtx,
): void {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item[key]))
      ctx.addIssue({
        code: 'custom',
        message: `${label} "${item[key]}" appears twice`,
        path: [listPath, i, key],
      });
    seen.add(item[key]);
  });
}
