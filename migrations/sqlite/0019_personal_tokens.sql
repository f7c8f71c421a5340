CREATE TABLE `personal_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`team_id` text,
	`name` text NOT NULL,
	`scope` text NOT NULL,
	`digest` text NOT NULL,
	`expires_at` integer NOT NULL,
	`last_used_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `personal_tokens_digest_unique` ON `personal_tokens` (`digest`);--> statement-breakpoint
CREATE INDEX `personal_tokens_user_idx` ON `personal_tokens` (`user_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `personal_tokens_team_idx` ON `personal_tokens` (`team_id`);--> statement-breakpoint
CREATE INDEX `personal_tokens_expires_idx` ON `personal_tokens` (`expires_at`);--> statement-breakpoint
CREATE INDEX `personal_tokens_created_idx` ON `personal_tokens` (`created_at`);