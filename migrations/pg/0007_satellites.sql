CREATE TABLE "satellite_registration_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"team_id" text,
	"created_by" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"used_by_satellite_id" text,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "satellites" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"satellite_type" text NOT NULL,
	"team_id" text,
	"status" text NOT NULL,
	"disabled_at" timestamp with time zone,
	"key_digest" text NOT NULL,
	"capabilities" jsonb NOT NULL,
	"satellite_url" text,
	"system_info" jsonb,
	"system_metrics" jsonb,
	"version" text,
	"last_heartbeat_at" timestamp with time zone,
	"registered_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "satellite_registration_tokens" ADD CONSTRAINT "satellite_registration_tokens_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "satellites" ADD CONSTRAINT "satellites_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "satellite_registration_tokens_created_idx" ON "satellite_registration_tokens" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "satellite_registration_tokens_team_idx" ON "satellite_registration_tokens" USING btree ("team_id","created_at");--> statement-breakpoint
CREATE INDEX "satellite_registration_tokens_expires_idx" ON "satellite_registration_tokens" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "satellites_name_unique" ON "satellites" USING btree ("name");--> statement-breakpoint
CREATE UNIQUE INDEX "satellites_key_digest_unique" ON "satellites" USING btree ("key_digest");--> statement-breakpoint
CREATE INDEX "satellites_team_idx" ON "satellites" USING btree ("team_id","created_at");--> statement-breakpoint
CREATE INDEX "satellites_created_idx" ON "satellites" USING btree ("created_at");