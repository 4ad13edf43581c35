-- AlterTable
ALTER TABLE "x402_refunds" ADD COLUMN     "destination" TEXT,
ADD COLUMN     "unclaimable_reason" TEXT;

