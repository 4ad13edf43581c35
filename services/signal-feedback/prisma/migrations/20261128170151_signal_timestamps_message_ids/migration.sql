-- AlterTable
ALTER TABLE "signals" ADD COLUMN     "message_id" VARCHAR(100),
ADD COLUMN     "received_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "signal_message_ids" (
    "product_id" UUID NOT NULL,
    "message_id" VARCHAR(100) NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "signal_message_ids_pkey" PRIMARY KEY ("product_id","message_id")
);

-- CreateIndex
CREATE INDEX "signal_message_ids_received_at_idx" ON "signal_message_ids"("received_at");

-- AddForeignKey
ALTER TABLE "signal_message_ids" ADD CONSTRAINT "signal_message_ids_product_id_fkey" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE CASCADE;

