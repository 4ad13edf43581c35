-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "provisional_at" TIMESTAMPTZ(3),
ADD COLUMN     "provisional_figures" JSONB,
ADD COLUMN     "provisional_signal_id" BIGINT;

