-- The catalogue's revision: one row, bumped by every insert, update or delete on the catalogue
-- tables (foreign-key cascades and SET NULL actions included), in the writer's own transaction.
INSERT INTO `catalogue_revision` (`id`, `revision`) VALUES (1, 0) ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE TRIGGER `mcp_servers_revision_insert` AFTER INSERT ON `mcp_servers` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_servers_revision_update` AFTER UPDATE ON `mcp_servers` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_servers_revision_delete` AFTER DELETE ON `mcp_servers` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_server_tags_revision_insert` AFTER INSERT ON `mcp_server_tags` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_server_tags_revision_update` AFTER UPDATE ON `mcp_server_tags` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_server_tags_revision_delete` AFTER DELETE ON `mcp_server_tags` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_server_versions_revision_insert` AFTER INSERT ON `mcp_server_versions` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_server_versions_revision_update` AFTER UPDATE ON `mcp_server_versions` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_server_versions_revision_delete` AFTER DELETE ON `mcp_server_versions` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_categories_revision_insert` AFTER INSERT ON `mcp_categories` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_categories_revision_update` AFTER UPDATE ON `mcp_categories` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_categories_revision_delete` AFTER DELETE ON `mcp_categories` BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
END;
