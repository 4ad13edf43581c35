-- AlterTable
ALTER TABLE "deployments" ADD COLUMN     "control_context_ids" UUID[] DEFAULT ARRAY[]::UUID[],
ADD COLUMN     "signal_types" VARCHAR(100)[] DEFAULT ARRAY[]::VARCHAR(100)[],
ADD COLUMN     "treated_context_ids" UUID[] DEFAULT ARRAY[]::UUID[];

