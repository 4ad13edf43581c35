-- Data only (Prisma's schema cannot express a backfill): copy each skill's metrics and health-check
-- scheduling into skill_stats before the next migration drops those columns from skills.
INSERT INTO "skill_stats" ("skill_id", "success_rate_24h", "avg_latency_ms", "calls_30d", "rating_sum", "rating_count",
  "popularity", "next_health_check_at", "last_health_check_at", "consecutive_failures", "consecutive_successes")
SELECT "skill_id", "success_rate_24h", "avg_latency_ms", "calls_30d", "rating_sum", "rating_count",
  "popularity", "next_health_check_at", "last_health_check_at", "consecutive_failures", "consecutive_successes"
FROM "skills"
ON CONFLICT ("skill_id") DO NOTHING;
