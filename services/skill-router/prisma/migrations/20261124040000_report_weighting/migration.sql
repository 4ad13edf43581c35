-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "first_routed_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "call_reports" ADD COLUMN     "counted" BOOLEAN NOT NULL DEFAULT true;

