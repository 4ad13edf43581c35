-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "scan_reports" (
    "id" UUID NOT NULL,
    "generated_at" TIMESTAMPTZ(3) NOT NULL,
    "origin" TEXT NOT NULL,
    "content_hash" TEXT NOT NULL,
    "brief" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "scan_reports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sector_reports" (
    "id" UUID NOT NULL,
    "scan_report_id" UUID NOT NULL,
    "sector" TEXT NOT NULL,
    "generated_at" TIMESTAMPTZ(3) NOT NULL,
    "gaps" JSONB NOT NULL,
    "pain_clusters" JSONB NOT NULL,
    "trends" JSONB NOT NULL,
    "keywords" JSONB NOT NULL,
    "gaps_count" INTEGER NOT NULL,

    CONSTRAINT "sector_reports_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "x402_payments" (
    "signature" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "claim_token" TEXT,
    "payer" TEXT,
    "amount_atomic" DECIMAL(39,0),
    "asset" TEXT,
    "pay_to" TEXT,
    "slot" BIGINT,
    "block_time" TIMESTAMPTZ(3),
    "response_status" INTEGER,
    "response_headers" JSONB,
    "response_body" TEXT,
    "job_id" TEXT,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "verified_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "x402_payments_pkey" PRIMARY KEY ("signature")
);

-- CreateIndex
CREATE UNIQUE INDEX "scan_reports_content_hash_key" ON "scan_reports"("content_hash");

-- CreateIndex
CREATE INDEX "scan_reports_generated_at_idx" ON "scan_reports"("generated_at" DESC);

-- CreateIndex
CREATE INDEX "sector_reports_sector_generated_at_idx" ON "sector_reports"("sector", "generated_at" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "sector_reports_scan_report_id_sector_key" ON "sector_reports"("scan_report_id", "sector");

-- CreateIndex
CREATE INDEX "x402_payments_job_id_idx" ON "x402_payments"("job_id");

-- CreateIndex
CREATE INDEX "x402_payments_payer_idx" ON "x402_payments"("payer");

-- AddForeignKey
ALTER TABLE "sector_reports" ADD CONSTRAINT "sector_reports_scan_report_id_fkey" FOREIGN KEY ("scan_report_id") REFERENCES "scan_reports"("id") ON DELETE CASCADE ON UPDATE CASCADE;

