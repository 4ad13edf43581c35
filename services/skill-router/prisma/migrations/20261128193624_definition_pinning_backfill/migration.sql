-- Data only (Prisma's schema cannot express a backfill): each existing skill's current revision becomes
-- its first recorded version (without a definition hash: it was registered before definitions were
-- pinned), and active skills get their first conformance call within the next ten minutes.
INSERT INTO "skill_versions" ("skill_id", "revision", "definition", "status", "verification", "verification_reason",
  "verified_at", "created_at")
SELECT "skill_id", "revision",
  jsonb_build_object('endpoint', "endpoint", 'description', "description",
    'pricing', jsonb_build_object('model', "pricing_model", 'price_usd', "price_usd"),
    'input_schema', "input_schema", 'output_schema', "output_schema"),
  CASE WHEN "status" = 'pending_verification' THEN 'pending_verification'
       WHEN "status" = 'verification_failed' THEN 'failed' ELSE 'passed' END,
  "verification", "verification_reason", "verified_at", "updated_at"
FROM "skills"
ON CONFLICT ("skill_id", "revision") DO NOTHING;

UPDATE "skill_stats" st SET "next_conformance_at" = now() + random() * interval '10 minutes'
FROM "skills" s
WHERE s."skill_id" = st."skill_id" AND s."status" = 'active' AND st."next_conformance_at" IS NULL;
