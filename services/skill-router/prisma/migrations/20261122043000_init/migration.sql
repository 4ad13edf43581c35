-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "skills" (
    "skill_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "capabilities" TEXT[],
    "chains" TEXT[],
    "pricing_model" TEXT NOT NULL,
    "price_usd" DOUBLE PRECISION NOT NULL,
    "endpoint" TEXT NOT NULL,
    "input_schema" JSONB NOT NULL,
    "output_schema" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending_verification',
    "owner_key_id" UUID NOT NULL,
    "revision" INTEGER NOT NULL DEFAULT 1,
    "verification" JSONB,
    "verification_reason" TEXT,
    "verified_at" TIMESTAMPTZ(3),
    "verification_lease_until" TIMESTAMPTZ(3),
    "next_health_check_at" TIMESTAMPTZ(3),
    "last_health_check_at" TIMESTAMPTZ(3),
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "consecutive_successes" INTEGER NOT NULL DEFAULT 0,
    "success_rate_24h" DOUBLE PRECISION NOT NULL DEFAULT 1,
    "avg_latency_ms" DOUBLE PRECISION,
    "calls_30d" INTEGER NOT NULL DEFAULT 0,
    "rating_sum" INTEGER NOT NULL DEFAULT 0,
    "rating_count" INTEGER NOT NULL DEFAULT 0,
    "popularity" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "search_vector" tsvector,
    "route_vector" tsvector,
    "match_terms" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "skills_pkey" PRIMARY KEY ("skill_id")
);

-- CreateTable
CREATE TABLE "health_checks" (
    "id" BIGSERIAL NOT NULL,
    "skill_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "ok" BOOLEAN NOT NULL,
    "latency_ms" INTEGER,
    "status_code" INTEGER,
    "error" TEXT,
    "checked_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "health_checks_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "call_reports" (
    "id" BIGSERIAL NOT NULL,
    "skill_id" TEXT NOT NULL,
    "api_key_id" UUID NOT NULL,
    "caller" TEXT NOT NULL,
    "call_result" TEXT NOT NULL,
    "latency_ms" INTEGER,
    "satisfaction" INTEGER,
    "notes" TEXT,
    "reported_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "call_reports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "rate_limits" (
    "key" VARCHAR(255) NOT NULL,
    "points" INTEGER NOT NULL DEFAULT 0,
    "expire" BIGINT,

    CONSTRAINT "rate_limits_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "skills_search_vector_idx" ON "skills" USING GIN ("search_vector");

-- CreateIndex
CREATE INDEX "skills_route_vector_idx" ON "skills" USING GIN ("route_vector");

-- CreateIndex
CREATE INDEX "skills_capabilities_idx" ON "skills" USING GIN ("capabilities");

-- CreateIndex
CREATE INDEX "skills_chains_idx" ON "skills" USING GIN ("chains");

-- CreateIndex
CREATE INDEX "skills_status_popularity_idx" ON "skills"("status", "popularity" DESC);

-- CreateIndex
CREATE INDEX "skills_status_created_at_idx" ON "skills"("status", "created_at" DESC);

-- CreateIndex
CREATE INDEX "skills_status_next_health_check_at_idx" ON "skills"("status", "next_health_check_at");

-- CreateIndex
CREATE INDEX "health_checks_skill_id_checked_at_idx" ON "health_checks"("skill_id", "checked_at" DESC);

-- CreateIndex
CREATE INDEX "call_reports_skill_id_reported_at_idx" ON "call_reports"("skill_id", "reported_at" DESC);

-- AddForeignKey
ALTER TABLE "skills" ADD CONSTRAINT "skills_owner_key_id_fkey" FOREIGN KEY ("owner_key_id") REFERENCES "api_keys"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "health_checks" ADD CONSTRAINT "health_checks_skill_id_fkey" FOREIGN KEY ("skill_id") REFERENCES "skills"("skill_id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "call_reports" ADD CONSTRAINT "call_reports_skill_id_fkey" FOREIGN KEY ("skill_id") REFERENCES "skills"("skill_id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "call_reports" ADD CONSTRAINT "call_reports_api_key_id_fkey" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

