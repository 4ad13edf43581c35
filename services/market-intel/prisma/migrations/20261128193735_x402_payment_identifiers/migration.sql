-- CreateTable
CREATE TABLE "x402_payment_identifiers" (
    "payer" TEXT NOT NULL,
    "identifier" TEXT NOT NULL,
    "signature" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "x402_payment_identifiers_pkey" PRIMARY KEY ("payer","identifier")
);

