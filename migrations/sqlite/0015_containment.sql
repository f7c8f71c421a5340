ALTER TABLE `satellites` ADD `public_key_changed_at` integer;--> statement-breakpoint
ALTER TABLE `satellites` ADD `isolation` text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE `satellites` ADD `runtimes` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `satellites` ADD `offline_at` integer;--> statement-breakpoint
ALTER TABLE `mcp_installation_values` ADD `approved_key` text;--> statement-breakpoint
ALTER TABLE `mcp_installations` ADD `network` text DEFAULT 'full' NOT NULL;