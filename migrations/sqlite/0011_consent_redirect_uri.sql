ALTER TABLE `oauth_consents` ADD `redirect_uris` text;--> statement-breakpoint
CREATE INDEX `oauth_consents_client_idx` ON `oauth_consents` (`client_id`);