-- CreateIndex
CREATE INDEX "signals_product_id_id_idx" ON "signals"("product_id", "id");

