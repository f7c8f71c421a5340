CREATE TABLE `satellite_registration_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`scope` text NOT NULL,
	`team_id` text,
	`created_by` text NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`used_by_satellite_id` text,
	`revoked_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `satellite_registration_tokens_created_idx` ON `satellite_registration_tokens` (`created_at`);--> statement-breakpoint
CREATE INDEX `satellite_registration_tokens_team_idx` ON `satellite_registration_tokens` (`team_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `satellite_registration_tokens_expires_idx` ON `satellite_registration_tokens` (`expires_at`);--> statement-breakpoint
CREATE TABLE `satellites` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`satellite_type` text NOT NULL,
	`team_id` text,
	`status` text NOT NULL,
	`disabled_at` integer,
	`key_digest` text NOT NULL,
	`capabilities` text NOT NULL,
	`satellite_url` text,
	`system_info` text,
	`system_metrics` text,
	`version` text,
	`last_heartbeat_at` integer,
	`registered_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `satellites_name_unique` ON `satellites` (`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `satellites_key_digest_unique` ON `satellites` (`key_digest`);--> statement-breakpoint
CREATE INDEX `satellites_team_idx` ON `satellites` (`team_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `satellites_created_idx` ON `satellites` (`created_at`);