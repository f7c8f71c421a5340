ALTER TABLE "satellites" ADD COLUMN "public_key_changed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "satellites" ADD COLUMN "isolation" text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE "satellites" ADD COLUMN "runtimes" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "satellites" ADD COLUMN "offline_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "mcp_installation_values" ADD COLUMN "approved_key" text;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD COLUMN "network" text DEFAULT 'full' NOT NULL;