ALTER TABLE `oauth_clients` ADD `metadata` text;--> statement-breakpoint
ALTER TABLE `oauth_requests` ADD `prompt` text;