-- AlterTable
ALTER TABLE "skills" ADD COLUMN     "embedding" REAL[],
ADD COLUMN     "embedding_model" TEXT,
ADD COLUMN     "embedding_revision" INTEGER;

