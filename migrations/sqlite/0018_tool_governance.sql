CREATE TABLE `installation_tool_approvals` (
	`installation_id` text NOT NULL,
	`name` text NOT NULL,
	`hash` text NOT NULL,
	`definition` text NOT NULL,
	`approved_by` text NOT NULL,
	`approved_at` integer NOT NULL,
	PRIMARY KEY(`installation_id`, `name`),
	FOREIGN KEY (`installation_id`) REFERENCES `mcp_installations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `mcp_installations` ADD `disabled_tools` text;--> statement-breakpoint
ALTER TABLE `mcp_installations` ADD `allowed_tools` text;--> statement-breakpoint
ALTER TABLE `mcp_installations` ADD `pin_tools` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `mcp_installations` ADD `held_tools` text DEFAULT '[]' NOT NULL;