-- Partial words and small typos in catalogue search: a trigram index on lower(name). pg_trgm is
-- a trusted extension (a database owner may create it); where the role may still not, the
-- migration goes on without it and search uses the weighted tsvector alone (the service logs
-- that once at start).
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
  RAISE NOTICE 'pg_trgm is not available (%): catalogue search runs without trigram matching', SQLERRM;
END $$;
--> statement-breakpoint
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX IF NOT EXISTS mcp_servers_name_trgm_idx ON mcp_servers USING gin (lower(name) gin_trgm_ops);
  END IF;
END $$;
