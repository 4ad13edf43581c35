-- AlterTable
ALTER TABLE "agent_jobs" ALTER COLUMN "tx_signature" DROP NOT NULL,
ALTER COLUMN "network" DROP NOT NULL,
ALTER COLUMN "payer" DROP NOT NULL,
ALTER COLUMN "amount_atomic" DROP NOT NULL;

-- CreateTable
CREATE TABLE "scout_items" (
    "sector" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "source_name" TEXT NOT NULL,
    "published_at" TIMESTAMPTZ(3) NOT NULL,
    "lang" TEXT NOT NULL,
    "points" INTEGER,
    "comments" INTEGER,
    "first_job_id" TEXT NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "scout_items_pkey" PRIMARY KEY ("sector","hash")
);

-- CreateTable
CREATE TABLE "scout_source_states" (
    "sector" TEXT NOT NULL,
    "source_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "etag" TEXT,
    "last_modified" TEXT,
    "last_status" TEXT NOT NULL,
    "last_error" TEXT,
    "last_fetched_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "scout_source_states_pkey" PRIMARY KEY ("sector","source_id")
);

-- CreateTable
CREATE TABLE "scout_schedules" (
    "sector" TEXT NOT NULL,
    "active_job_id" TEXT,
    "last_started_at" TIMESTAMPTZ(3),
    "last_finished_at" TIMESTAMPTZ(3),
    "last_job_id" TEXT,
    "last_status" TEXT,

    CONSTRAINT "scout_schedules_pkey" PRIMARY KEY ("sector")
);

-- CreateIndex
CREATE INDEX "scout_items_sector_published_at_idx" ON "scout_items"("sector", "published_at" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "scout_schedules_active_job_id_key" ON "scout_schedules"("active_job_id");

