-- One database per service that keeps state (docs/deploying.md, "Deploying"): docker/compose.yaml
-- and the cluster end-to-end run (infra/e2e/run.sh) load it.
CREATE DATABASE market_intel;
CREATE DATABASE signal_feedback;
CREATE DATABASE skill_router;
