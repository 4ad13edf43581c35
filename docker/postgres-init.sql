-- Compose only: one database per service that keeps state (ARCHITECTURE.md, "Databases and migrations").
CREATE DATABASE market_intel;
CREATE DATABASE signal_feedback;
CREATE DATABASE skill_router;
