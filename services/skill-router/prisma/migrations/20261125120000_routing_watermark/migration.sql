-- AlterTable
ALTER TABLE "skills" ADD COLUMN     "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- AlterTable
ALTER TABLE "skill_stats" ADD COLUMN     "changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- CreateIndex
CREATE INDEX "skills_changed_at_idx" ON "skills"("changed_at");

-- CreateIndex
CREATE INDEX "skill_stats_changed_at_idx" ON "skill_stats"("changed_at");

