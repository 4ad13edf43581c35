-- CreateTable
CREATE TABLE "x402_refunds" (
    "payment_signature" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "amount_atomic" DECIMAL(39,0) NOT NULL,
    "asset" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "job_id" TEXT,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "signature" TEXT,
    "transaction" TEXT,
    "last_valid_block_height" BIGINT,
    "slot" BIGINT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "claim_token" TEXT,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "confirmed_at" TIMESTAMPTZ(3),

    CONSTRAINT "x402_refunds_pkey" PRIMARY KEY ("payment_signature")
);

-- CreateIndex
CREATE UNIQUE INDEX "x402_refunds_signature_key" ON "x402_refunds"("signature");

-- CreateIndex
CREATE INDEX "x402_refunds_status_next_attempt_at_idx" ON "x402_refunds"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "x402_refunds_job_id_idx" ON "x402_refunds"("job_id");

