-- CreateTable
CREATE TABLE "x402_siwx_nonces" (
    "nonce" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "x402_siwx_nonces_pkey" PRIMARY KEY ("nonce")
);

-- CreateIndex
CREATE INDEX "x402_siwx_nonces_expires_at_idx" ON "x402_siwx_nonces"("expires_at");

