CREATE TABLE `mcp_installation_values` (
	`installation_id` text NOT NULL,
	`user_id` text,
	`key` text NOT NULL,
	`value` text,
	`sealed` text,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`installation_id`) REFERENCES `mcp_installations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_installation_values_team_unique` ON `mcp_installation_values` (`installation_id`,`key`) WHERE "mcp_installation_values"."user_id" is null;--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_installation_values_user_unique` ON `mcp_installation_values` (`installation_id`,`user_id`,`key`) WHERE "mcp_installation_values"."user_id" is not null;--> statement-breakpoint
CREATE INDEX `mcp_installation_values_user_idx` ON `mcp_installation_values` (`user_id`);--> statement-breakpoint
CREATE TABLE `mcp_installations` (
	`id` text PRIMARY KEY NOT NULL,
	`team_id` text NOT NULL,
	`server_id` text NOT NULL,
	`version_id` text NOT NULL,
	`name` text NOT NULL,
	`track_latest` integer NOT NULL,
	`target_kind` text NOT NULL,
	`target_index` integer NOT NULL,
	`transport` text NOT NULL,
	`inputs` text NOT NULL,
	`satellite_id` text,
	`desired` text NOT NULL,
	`spec_revision` integer NOT NULL,
	`restart_generation` integer NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`server_id`) REFERENCES `mcp_servers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`version_id`) REFERENCES `mcp_server_versions`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`satellite_id`) REFERENCES `satellites`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_installations_team_name_unique` ON `mcp_installations` (`team_id`,`name`);--> statement-breakpoint
CREATE INDEX `mcp_installations_satellite_idx` ON `mcp_installations` (`satellite_id`);--> statement-breakpoint
CREATE INDEX `mcp_installations_server_idx` ON `mcp_installations` (`server_id`,`track_latest`);--> statement-breakpoint
CREATE INDEX `mcp_installations_version_idx` ON `mcp_installations` (`version_id`);