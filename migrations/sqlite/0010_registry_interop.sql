CREATE TABLE `registry_sync_state` (
	`id` integer PRIMARY KEY NOT NULL,
	`lock_token` text,
	`locked_until` integer,
	`next_since` text,
	`upstream_url` text,
	`last_synced_at` integer
);
--> statement-breakpoint
ALTER TABLE `mcp_server_versions` ADD `server_json` text;--> statement-breakpoint
ALTER TABLE `mcp_servers` ADD `registry_name` text;--> statement-breakpoint
ALTER TABLE `mcp_servers` ADD `source` text DEFAULT 'manual' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_servers_registry_name_unique` ON `mcp_servers` (`registry_name`);