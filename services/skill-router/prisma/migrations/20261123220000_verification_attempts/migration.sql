-- AlterTable
ALTER TABLE "skills" ADD COLUMN     "verification_attempts" INTEGER NOT NULL DEFAULT 0;

