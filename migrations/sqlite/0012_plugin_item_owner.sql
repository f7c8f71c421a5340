ALTER TABLE `plugin_items` ADD `owner_id` text REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade;--> statement-breakpoint
CREATE INDEX `plugin_items_owner_idx` ON `plugin_items` (`plugin_id`,`collection`,`owner_id`,`id`);
