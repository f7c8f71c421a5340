CREATE TABLE `catalogue_revision` (
	`id` integer PRIMARY KEY NOT NULL,
	`revision` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `mcp_categories` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`name_key` text NOT NULL,
	`description` text,
	`icon` text,
	`sort_order` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_categories_name_unique` ON `mcp_categories` (`name_key`);--> statement-breakpoint
CREATE INDEX `mcp_categories_order_idx` ON `mcp_categories` (`sort_order`,`name`);--> statement-breakpoint
CREATE TABLE `mcp_server_tags` (
	`server_id` text NOT NULL,
	`tag` text NOT NULL,
	PRIMARY KEY(`server_id`, `tag`),
	FOREIGN KEY (`server_id`) REFERENCES `mcp_servers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mcp_server_tags_tag_idx` ON `mcp_server_tags` (`tag`,`server_id`);--> statement-breakpoint
CREATE TABLE `mcp_server_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`server_id` text NOT NULL,
	`version` text NOT NULL,
	`precedence` text NOT NULL,
	`prerelease` integer NOT NULL,
	`status` text NOT NULL,
	`changelog` text,
	`release_date` integer,
	`packages` text,
	`remotes` text,
	`is_latest` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`server_id`) REFERENCES `mcp_servers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_server_versions_precedence_unique` ON `mcp_server_versions` (`server_id`,`precedence`);--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_server_versions_one_latest` ON `mcp_server_versions` (`server_id`) WHERE "mcp_server_versions"."is_latest" = 1;--> statement-breakpoint
CREATE TABLE `mcp_servers` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	`sort_name` text NOT NULL,
	`slug` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`long_description` text,
	`category_id` text,
	`tags` text NOT NULL,
	`language` text,
	`runtime` text,
	`language_key` text,
	`runtime_key` text,
	`transport_type` text NOT NULL,
	`status` text NOT NULL,
	`featured` integer DEFAULT false NOT NULL,
	`visibility` text NOT NULL,
	`owner_team_id` text,
	`repository_url` text,
	`website_url` text,
	`icon_url` text,
	`author_name` text,
	`organization` text,
	`license` text,
	`packages` text NOT NULL,
	`remotes` text NOT NULL,
	`latest_version` text,
	`created_by` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`category_id`) REFERENCES `mcp_categories`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`owner_team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_servers_id_unique` ON `mcp_servers` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_servers_slug_unique` ON `mcp_servers` (`slug`);--> statement-breakpoint
CREATE INDEX `mcp_servers_name_idx` ON `mcp_servers` (`sort_name`,`id`);--> statement-breakpoint
CREATE INDEX `mcp_servers_created_idx` ON `mcp_servers` (`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `mcp_servers_updated_idx` ON `mcp_servers` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `mcp_servers_category_idx` ON `mcp_servers` (`category_id`);--> statement-breakpoint
CREATE INDEX `mcp_servers_status_idx` ON `mcp_servers` (`status`);--> statement-breakpoint
CREATE INDEX `mcp_servers_language_idx` ON `mcp_servers` (`language_key`);--> statement-breakpoint
CREATE INDEX `mcp_servers_runtime_idx` ON `mcp_servers` (`runtime_key`);--> statement-breakpoint
CREATE INDEX `mcp_servers_owner_team_idx` ON `mcp_servers` (`owner_team_id`);--> statement-breakpoint
CREATE INDEX `mcp_servers_visibility_idx` ON `mcp_servers` (`visibility`,`owner_team_id`);