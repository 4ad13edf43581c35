-- CreateEnum
CREATE TYPE "Verdict" AS ENUM ('pending', 'improved', 'regressed', 'inconclusive');

-- AlterTable
ALTER TABLE "usage_counters" ADD COLUMN     "deployments" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "proposals" ADD COLUMN     "regression_of_id" UUID;

-- CreateTable
CREATE TABLE "deployments" (
    "id" UUID NOT NULL,
    "proposal_id" UUID NOT NULL,
    "deployed_at" TIMESTAMPTZ(3) NOT NULL,
    "version" TEXT,
    "note" TEXT,
    "window_minutes" INTEGER NOT NULL,
    "signal_type" VARCHAR(100),
    "alpha" DOUBLE PRECISION NOT NULL,
    "verdict" "Verdict" NOT NULL DEFAULT 'pending',
    "verification" JSONB,
    "verified_at" TIMESTAMPTZ(3),
    "lease_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deployments_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "deployments_proposal_id_deployed_at_idx" ON "deployments"("proposal_id", "deployed_at" DESC);

-- CreateIndex
CREATE INDEX "deployments_verdict_deployed_at_idx" ON "deployments"("verdict", "deployed_at");

-- CreateIndex
CREATE INDEX "proposals_regression_of_id_idx" ON "proposals"("regression_of_id");

-- AddForeignKey
ALTER TABLE "proposals" ADD CONSTRAINT "proposals_regression_of_id_fkey" FOREIGN KEY ("regression_of_id") REFERENCES "deployments"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deployments" ADD CONSTRAINT "deployments_proposal_id_fkey" FOREIGN KEY ("proposal_id") REFERENCES "proposals"("id") ON DELETE CASCADE ON UPDATE CASCADE;

