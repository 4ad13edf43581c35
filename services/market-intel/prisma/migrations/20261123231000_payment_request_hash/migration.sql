-- AlterTable
ALTER TABLE "x402_payments" ADD COLUMN     "request_hash" TEXT;

