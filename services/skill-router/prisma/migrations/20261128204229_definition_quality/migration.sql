-- AlterTable
ALTER TABLE "skills" ADD COLUMN     "quality_parts" JSONB,
ADD COLUMN     "quality_score" SMALLINT;

-- CreateIndex
CREATE INDEX "skills_status_quality_score_idx" ON "skills"("status", "quality_score" DESC);

