CREATE TABLE `oauth_connection_flows` (
	`id` text PRIMARY KEY NOT NULL,
	`state_digest` text NOT NULL,
	`session_id` text NOT NULL,
	`user_id` text NOT NULL,
	`team_id` text NOT NULL,
	`installation_id` text NOT NULL,
	`input_key` text NOT NULL,
	`owner` text NOT NULL,
	`issuer` text NOT NULL,
	`client_id` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`code_verifier_sealed` text NOT NULL,
	`resource` text NOT NULL,
	`scopes` text NOT NULL,
	`return_to` text,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`installation_id`) REFERENCES `mcp_installations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oauth_connection_flows_state_unique` ON `oauth_connection_flows` (`state_digest`);--> statement-breakpoint
CREATE INDEX `oauth_connection_flows_expires_idx` ON `oauth_connection_flows` (`expires_at`);--> statement-breakpoint
CREATE TABLE `oauth_connections` (
	`id` text PRIMARY KEY NOT NULL,
	`installation_id` text NOT NULL,
	`team_id` text NOT NULL,
	`user_id` text,
	`owner` text NOT NULL,
	`input_key` text NOT NULL,
	`issuer` text NOT NULL,
	`client_id` text NOT NULL,
	`status` text NOT NULL,
	`sealed` text NOT NULL,
	`refresh_at` integer,
	`token_revision` integer DEFAULT 0 NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	`lease_owner` text,
	`lease_until` integer,
	`connected_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`installation_id`) REFERENCES `mcp_installations`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oauth_connections_owner_unique` ON `oauth_connections` (`installation_id`,`input_key`,`owner`);--> statement-breakpoint
CREATE INDEX `oauth_connections_refresh_idx` ON `oauth_connections` (`refresh_at`);--> statement-breakpoint
CREATE INDEX `oauth_connections_user_idx` ON `oauth_connections` (`user_id`);--> statement-breakpoint
CREATE INDEX `oauth_connections_team_idx` ON `oauth_connections` (`team_id`);--> statement-breakpoint
CREATE TABLE `upstream_oauth_clients` (
	`issuer` text PRIMARY KEY NOT NULL,
	`method` text NOT NULL,
	`client_id` text NOT NULL,
	`client_secret_sealed` text,
	`token_endpoint_auth_method` text NOT NULL,
	`registered_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
