import { z } from 'zod';
import { StorableString } from './common';
import { SignalType } from './signals';

/** GET /api/context/{id}/series query. */
export const SeriesQuery = z.object({
  from: z.iso.datetime({ offset: true }).optional().describe('inclusive; default: 7 days before to'),
  to: z.iso.datetime({ offset: true }).optional().describe('exclusive; default: now'),
  bucket: z.enum(['hour', 'day']).default('hour').describe('bucket length, aligned to UTC'),
});

/** One bucket of GET /api/context/{id}/series. */
export const SeriesPoint = z.object({
  start: z.iso.datetime(),
  signals: z.int().min(0),
  negative: z.int().min(0),
  negative_rate: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('negative / signals, four decimals; null for an empty bucket'),
});

const SignalTypeList = z.array(SignalType).max(200);

/** POST /api/context body (README, "Endpoints"). */
export const CreateContextBody = z.object({
  product_id: z.uuid(),
  name: StorableString.trim().min(1).max(100),
  content: StorableString.trim().min(1).max(10_000),
  positive_signals: SignalTypeList.default([]),
  negative_signals: SignalTypeList.default([]),
});

/** PATCH /api/context body: the id plus at least one field to change. */
export const UpdateContextBody = z
  .object({
    id: z.uuid(),
    name: StorableString.trim().min(1).max(100).optional(),
    content: StorableString.trim().min(1).max(10_000).optional(),
    positive_signals: SignalTypeList.optional(),
    negative_signals: SignalTypeList.optional(),
  })
  .refine(
    (v) =>
      v.name !== undefined ||
      v.content !== undefined ||
      v.positive_signals !== undefined ||
      v.negative_signals !== undefined,
    {
      message: 'give at least one of name, content, positive_signals, negative_signals',
    },
  );

/** DELETE /api/context query. */
export const ContextIdQuery = z.object({ id: z.uuid().meta({ description: 'the context to delete' }) });

/** A context on the wire (README, "Endpoints"). */
export const Context = z.object({
  id: z.uuid(),
  product_id: z.uuid(),
  name: z.string(),
  content: z.string(),
  positive_signals: z.array(z.string()),
  negative_signals: z.array(z.string()),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
/** A {@link Context}. */
export type Context = z.infer<typeof Context>;
