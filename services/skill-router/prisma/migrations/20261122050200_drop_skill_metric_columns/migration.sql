-- DropIndex
DROP INDEX "skills_status_popularity_idx";

-- DropIndex
DROP INDEX "skills_status_next_health_check_at_idx";

-- AlterTable
ALTER TABLE "skills" DROP COLUMN "avg_latency_ms",
DROP COLUMN "calls_30d",
DROP COLUMN "consecutive_failures",
DROP COLUMN "consecutive_successes",
DROP COLUMN "last_health_check_at",
DROP COLUMN "next_health_check_at",
DROP COLUMN "popularity",
DROP COLUMN "rating_count",
DROP COLUMN "rating_sum",
DROP COLUMN "success_rate_24h";

