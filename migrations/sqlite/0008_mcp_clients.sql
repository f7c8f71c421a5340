ALTER TABLE `oauth_clients` ADD `metadata` text;--> statement-breakpoint
ALTER TABLE `oauth_grants` ADD `resource` text;--> statement-breakpoint
ALTER TABLE `oauth_requests` ADD `prompt` text;--> statement-breakpoint
ALTER TABLE `oauth_requests` ADD `resource` text;--> statement-breakpoint
ALTER TABLE `oauth_tokens` ADD `resource` text;