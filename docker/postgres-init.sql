-- One database per service that keeps state (ARCHITECTURE.md, "Databases and migrations"): docker/compose.yaml
-- and the cluster end-to-end run (infra/e2e/run.sh) load it.
CREATE DATABASE market_intel;
CREATE DATABASE signal_feedback;
CREATE DATABASE skill_router;
