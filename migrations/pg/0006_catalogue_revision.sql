-- The catalogue's revision: one row, bumped once per statement that inserts, updates, deletes
-- or truncates rows of a catalogue table (foreign-key cascades and SET NULL actions included),
-- in the writer's own transaction.
INSERT INTO "catalogue_revision" ("id", "revision") VALUES (1, 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE FUNCTION "bump_catalogue_revision"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "mcp_servers_revision" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "mcp_servers" FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_revision();
--> statement-breakpoint
CREATE TRIGGER "mcp_server_tags_revision" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "mcp_server_tags" FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_revision();
--> statement-breakpoint
CREATE TRIGGER "mcp_server_versions_revision" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "mcp_server_versions" FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_revision();
--> statement-breakpoint
CREATE TRIGGER "mcp_categories_revision" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "mcp_categories" FOR EACH STATEMENT EXECUTE FUNCTION bump_catalogue_revision();
