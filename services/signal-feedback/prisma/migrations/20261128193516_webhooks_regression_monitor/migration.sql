-- AlterTable
ALTER TABLE "products" ADD COLUMN     "webhook_secret" VARCHAR(200),
ADD COLUMN     "webhook_url" VARCHAR(2048);

-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "monitored_at" TIMESTAMPTZ(3),
ADD COLUMN     "regression_detected_at" TIMESTAMPTZ(3),
ADD COLUMN     "regression_evidence" JSONB;

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "product_id" UUID NOT NULL,
    "event_type" VARCHAR(100) NOT NULL,
    "message_id" VARCHAR(100) NOT NULL,
    "url" VARCHAR(2048) NOT NULL,
    "body" TEXT NOT NULL,
    "status" VARCHAR(20) NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_status" INTEGER,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_message_id_key" ON "webhook_deliveries"("message_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "webhook_deliveries"("status", "next_attempt_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_product_id_created_at_idx" ON "webhook_deliveries"("product_id", "created_at" DESC);

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_product_id_fkey" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE CASCADE;

