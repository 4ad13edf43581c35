-- AlterTable
ALTER TABLE "skill_stats" ALTER COLUMN "success_rate_24h" SET DEFAULT 0.9;

