-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "cohort" TEXT,
ADD COLUMN     "last_routed_on" DATE,
ADD COLUMN     "routed_days" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "skills" ADD COLUMN     "pay_to" TEXT;

-- AlterTable
ALTER TABLE "call_reports" ADD COLUMN     "payment_signature" TEXT,
ADD COLUMN     "weight" DOUBLE PRECISION NOT NULL DEFAULT 1;

-- CreateTable
CREATE TABLE "report_slots" (
    "slot" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "report_slots_pkey" PRIMARY KEY ("slot")
);

-- CreateTable
CREATE TABLE "report_payments" (
    "signature" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "skill_id" TEXT NOT NULL,
    "api_key_id" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "payer" TEXT,
    "amount_atomic" BIGINT,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "verified_at" TIMESTAMPTZ(3),

    CONSTRAINT "report_payments_pkey" PRIMARY KEY ("signature")
);

-- CreateIndex
CREATE INDEX "report_slots_created_at_idx" ON "report_slots"("created_at");

