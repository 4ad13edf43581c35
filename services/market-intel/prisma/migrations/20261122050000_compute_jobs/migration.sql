-- CreateTable
CREATE TABLE "agent_jobs" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "progress_pct" INTEGER NOT NULL DEFAULT 0,
    "input" JSONB NOT NULL,
    "state" JSONB,
    "step_index" INTEGER NOT NULL DEFAULT 0,
    "step_label" TEXT,
    "result" JSONB,
    "error" TEXT,
    "last_error" TEXT,
    "tx_signature" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "payer" TEXT NOT NULL,
    "amount_atomic" DECIMAL(39,0) NOT NULL,
    "webhook_url" TEXT,
    "prove_session_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "agent_jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "job_steps" (
    "job_id" TEXT NOT NULL,
    "step_index" INTEGER NOT NULL,
    "label" TEXT NOT NULL,
    "progress_pct" INTEGER NOT NULL,
    "runner_id" TEXT NOT NULL,
    "applied_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "job_steps_pkey" PRIMARY KEY ("job_id","step_index")
);

-- CreateTable
CREATE TABLE "outbox_messages" (
    "id" BIGSERIAL NOT NULL,
    "exchange" TEXT NOT NULL,
    "routing_key" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "body" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "attempts" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "job_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_error" TEXT,
    "last_status" INTEGER,
    "delivered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "agent_jobs_tx_signature_key" ON "agent_jobs"("tx_signature");

-- CreateIndex
CREATE INDEX "agent_jobs_status_created_at_idx" ON "agent_jobs"("status", "created_at");

-- CreateIndex
CREATE INDEX "outbox_messages_available_at_idx" ON "outbox_messages"("available_at");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_job_id_key" ON "webhook_deliveries"("job_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "webhook_deliveries"("status", "next_attempt_at");

-- AddForeignKey
ALTER TABLE "job_steps" ADD CONSTRAINT "job_steps_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "agent_jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

