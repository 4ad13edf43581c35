-- AlterTable
ALTER TABLE "skills" ADD COLUMN     "mcp_tool" TEXT;

