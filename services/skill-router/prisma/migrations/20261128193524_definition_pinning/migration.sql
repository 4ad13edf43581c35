-- AlterTable
ALTER TABLE "skills" ADD COLUMN     "definition_hash" TEXT;

-- AlterTable
ALTER TABLE "skill_stats" ADD COLUMN     "conformance_failures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "conformance_lease_until" TIMESTAMPTZ(3),
ADD COLUMN     "conformance_successes" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "last_conformance_at" TIMESTAMPTZ(3),
ADD COLUMN     "last_conformance_error" TEXT,
ADD COLUMN     "next_conformance_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "skill_versions" (
    "id" BIGSERIAL NOT NULL,
    "skill_id" TEXT NOT NULL,
    "revision" INTEGER NOT NULL,
    "definition_hash" TEXT,
    "definition" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending_verification',
    "verification" JSONB,
    "verification_reason" TEXT,
    "verified_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "skill_versions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "skill_versions_skill_id_revision_key" ON "skill_versions"("skill_id", "revision");

-- CreateIndex
CREATE INDEX "skill_stats_next_conformance_at_idx" ON "skill_stats"("next_conformance_at");

-- AddForeignKey
ALTER TABLE "skill_versions" ADD CONSTRAINT "skill_versions_skill_id_fkey" FOREIGN KEY ("skill_id") REFERENCES "skills"("skill_id") ON DELETE CASCADE ON UPDATE CASCADE;

