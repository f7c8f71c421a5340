-- Full-text search over the catalogue: an FTS5 external-content table on mcp_servers (name, tags,
-- description; the tags column holds a JSON array, whose brackets and quotes the tokenizer skips),
-- kept in sync by triggers, so an insert, update or delete of a server and its index entry are
-- one statement of one transaction. Prefix indexes make "postg"* fast.
CREATE VIRTUAL TABLE `mcp_servers_fts` USING fts5(name, tags, description, content='mcp_servers', content_rowid='seq', tokenize='unicode61 remove_diacritics 2', prefix='2 3 4');
--> statement-breakpoint
CREATE TRIGGER `mcp_servers_fts_insert` AFTER INSERT ON `mcp_servers` BEGIN
  INSERT INTO mcp_servers_fts(rowid, name, tags, description) VALUES (new.seq, new.name, new.tags, new.description);
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_servers_fts_delete` AFTER DELETE ON `mcp_servers` BEGIN
  INSERT INTO mcp_servers_fts(mcp_servers_fts, rowid, name, tags, description) VALUES ('delete', old.seq, old.name, old.tags, old.description);
END;
--> statement-breakpoint
CREATE TRIGGER `mcp_servers_fts_update` AFTER UPDATE OF name, tags, description ON `mcp_servers` BEGIN
  INSERT INTO mcp_servers_fts(mcp_servers_fts, rowid, name, tags, description) VALUES ('delete', old.seq, old.name, old.tags, old.description);
  INSERT INTO mcp_servers_fts(rowid, name, tags, description) VALUES (new.seq, new.name, new.tags, new.description);
END;
