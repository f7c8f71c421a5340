CREATE TABLE `mcp_instance_logs` (
	`id` text PRIMARY KEY NOT NULL,
	`instance_id` text NOT NULL,
	`installation_id` text NOT NULL,
	`user_id` text,
	`at` integer NOT NULL,
	`stream` text NOT NULL,
	`text` text NOT NULL,
	FOREIGN KEY (`installation_id`) REFERENCES `mcp_installations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mcp_instance_logs_instance_idx` ON `mcp_instance_logs` (`instance_id`,`id`);--> statement-breakpoint
CREATE INDEX `mcp_instance_logs_installation_idx` ON `mcp_instance_logs` (`installation_id`,`id`);--> statement-breakpoint
CREATE TABLE `mcp_instance_states` (
	`instance_id` text PRIMARY KEY NOT NULL,
	`installation_id` text NOT NULL,
	`user_id` text,
	`satellite_id` text NOT NULL,
	`spec_revision` integer NOT NULL,
	`spec_hash` text NOT NULL,
	`phase` text NOT NULL,
	`message` text,
	`started_at` integer,
	`tools` text NOT NULL,
	`reported_at` integer NOT NULL,
	FOREIGN KEY (`installation_id`) REFERENCES `mcp_installations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`satellite_id`) REFERENCES `satellites`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `mcp_instance_states_installation_idx` ON `mcp_instance_states` (`installation_id`);--> statement-breakpoint
ALTER TABLE `satellites` ADD `public_key` text;--> statement-breakpoint
ALTER TABLE `satellites` ADD `desired_stamp` integer DEFAULT 0 NOT NULL;