CREATE TABLE "registry_sync_state" (
	"id" integer PRIMARY KEY NOT NULL,
	"lock_token" text,
	"locked_until" timestamp with time zone,
	"next_since" text,
	"upstream_url" text,
	"last_synced_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "mcp_server_versions" ADD COLUMN "server_json" jsonb;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD COLUMN "registry_name" text;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD COLUMN "source" text DEFAULT 'manual' NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_registry_name_unique" ON "mcp_servers" USING btree ("registry_name");