CREATE TABLE `provider_states` (
	`id` text PRIMARY KEY NOT NULL,
	`digest` text NOT NULL,
	`return_to` text,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `provider_states_digest_unique` ON `provider_states` (`digest`);--> statement-breakpoint
CREATE INDEX `provider_states_expires_idx` ON `provider_states` (`expires_at`);