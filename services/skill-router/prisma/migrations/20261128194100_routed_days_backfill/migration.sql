-- Data only (Prisma's schema cannot express a backfill): a key that has routed before counts one
-- routed day (the day it first routed), so its reports keep a weight under the new model.
UPDATE "api_keys" SET "routed_days" = 1, "last_routed_on" = ("first_routed_at" AT TIME ZONE 'UTC')::date
WHERE "first_routed_at" IS NOT NULL;
