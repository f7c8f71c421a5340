CREATE TABLE `plugin_items` (
	`plugin_id` text NOT NULL,
	`collection` text NOT NULL,
	`id` text NOT NULL,
	`document` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`plugin_id`, `collection`, `id`)
);
