CREATE TABLE `team_invitations` (
	`id` text PRIMARY KEY NOT NULL,
	`team_id` text NOT NULL,
	`email` text NOT NULL,
	`role` text NOT NULL,
	`digest` text NOT NULL,
	`invited_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`accepted_at` integer,
	`accepted_by` text,
	`revoked_at` integer,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`invited_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`accepted_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `team_invitations_digest_unique` ON `team_invitations` (`digest`);--> statement-breakpoint
CREATE INDEX `team_invitations_team_idx` ON `team_invitations` (`team_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `team_invitations_team_email_idx` ON `team_invitations` (`team_id`,`email`);--> statement-breakpoint
CREATE INDEX `team_invitations_expires_idx` ON `team_invitations` (`expires_at`);--> statement-breakpoint
CREATE INDEX `team_invitations_invited_by_idx` ON `team_invitations` (`invited_by`);