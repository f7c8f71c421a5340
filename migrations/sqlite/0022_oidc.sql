CREATE TABLE `oidc_states` (
	`id` text PRIMARY KEY NOT NULL,
	`digest` text NOT NULL,
	`issuer` text NOT NULL,
	`nonce` text NOT NULL,
	`code_verifier` text NOT NULL,
	`return_to` text,
	`expires_at` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oidc_states_digest_unique` ON `oidc_states` (`digest`);--> statement-breakpoint
CREATE INDEX `oidc_states_expires_idx` ON `oidc_states` (`expires_at`);--> statement-breakpoint
ALTER TABLE `users` ADD `oidc_issuer` text;--> statement-breakpoint
ALTER TABLE `users` ADD `oidc_subject` text;--> statement-breakpoint
CREATE UNIQUE INDEX `users_oidc_identity_unique` ON `users` (`oidc_issuer`,`oidc_subject`);