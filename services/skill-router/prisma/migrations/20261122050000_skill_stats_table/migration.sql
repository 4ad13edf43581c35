-- CreateTable
CREATE TABLE "skill_stats" (
    "skill_id" TEXT NOT NULL,
    "success_rate_24h" DOUBLE PRECISION NOT NULL DEFAULT 1,
    "avg_latency_ms" DOUBLE PRECISION,
    "calls_30d" INTEGER NOT NULL DEFAULT 0,
    "rating_sum" INTEGER NOT NULL DEFAULT 0,
    "rating_count" INTEGER NOT NULL DEFAULT 0,
    "popularity" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "next_health_check_at" TIMESTAMPTZ(3),
    "last_health_check_at" TIMESTAMPTZ(3),
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "consecutive_successes" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "skill_stats_pkey" PRIMARY KEY ("skill_id")
);

-- CreateIndex
CREATE INDEX "skill_stats_next_health_check_at_idx" ON "skill_stats"("next_health_check_at");

-- CreateIndex
CREATE INDEX "skill_stats_popularity_idx" ON "skill_stats"("popularity" DESC);

-- AddForeignKey
ALTER TABLE "skill_stats" ADD CONSTRAINT "skill_stats_skill_id_fkey" FOREIGN KEY ("skill_id") REFERENCES "skills"("skill_id") ON DELETE CASCADE ON UPDATE CASCADE;

