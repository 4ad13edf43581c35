import { z } from 'zod';
import { StorableString } from './common';

/** PATCH /api/products/{id} (rename) body. */
export const RenameProductBody = z.object({ name: StorableString.trim().min(1).max(100) });

/** POST /api/products body. */
export const CreateProductBody = z.object({ name: StorableString.trim().min(1).max(100) });

/** 200 answer of POST /api/products: the key is shown this once. */
export const CreatedProduct = z.object({
  id: z.uuid(),
  name: z.string(),
  api_key: z.string().startsWith('spk_'),
});

/** A product as listed by GET /api/products (without its key). */
export const ProductSummary = z.object({
  id: z.uuid(),
  name: z.string(),
  api_key_prefix: z.string().describe('first characters of the key, for recognising it'),
  context_count: z.int(),
  created_at: z.iso.datetime(),
});

/** A {@link ProductSummary}. */
export type ProductSummary = z.infer<typeof ProductSummary>;

/** What a product holds: what deleting it removes. */
export const ProductContents = z.object({
  contexts: z.int().min(0),
  signals: z.int().min(0),
  proposals: z.int().min(0),
  deployments: z.int().min(0),
});

/** GET /api/products/{id}: the product and what it holds. */
export const ProductDetails = ProductSummary.extend({ contents: ProductContents });

/** 200 answer of DELETE /api/products/{id}. */
export const DeletedProduct = z.object({
  id: z.uuid(),
  deleted: z.literal(true),
  contents: ProductContents.describe('what was deleted with the product (and its key)'),
});
