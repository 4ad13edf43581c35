-- CreateTable
CREATE TABLE "x402_verification_attempts" (
    "key" TEXT NOT NULL,
    "points" INTEGER NOT NULL,
    "expire" BIGINT NOT NULL,

    CONSTRAINT "x402_verification_attempts_pkey" PRIMARY KEY ("key")
);

