CREATE TABLE "mcp_installation_values" (
	"installation_id" text NOT NULL,
	"user_id" text,
	"key" text NOT NULL,
	"value" text,
	"sealed" text,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mcp_installations" (
	"id" text PRIMARY KEY NOT NULL,
	"team_id" text NOT NULL,
	"server_id" text NOT NULL,
	"version_id" text NOT NULL,
	"name" text NOT NULL,
	"track_latest" boolean NOT NULL,
	"target_kind" text NOT NULL,
	"target_index" integer NOT NULL,
	"transport" text NOT NULL,
	"inputs" jsonb NOT NULL,
	"satellite_id" text,
	"desired" text NOT NULL,
	"spec_revision" integer NOT NULL,
	"restart_generation" integer NOT NULL,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "mcp_installation_values" ADD CONSTRAINT "mcp_installation_values_installation_id_mcp_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."mcp_installations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_installation_values" ADD CONSTRAINT "mcp_installation_values_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD CONSTRAINT "mcp_installations_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD CONSTRAINT "mcp_installations_server_id_mcp_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."mcp_servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD CONSTRAINT "mcp_installations_version_id_mcp_server_versions_id_fk" FOREIGN KEY ("version_id") REFERENCES "public"."mcp_server_versions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD CONSTRAINT "mcp_installations_satellite_id_satellites_id_fk" FOREIGN KEY ("satellite_id") REFERENCES "public"."satellites"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_installation_values_team_unique" ON "mcp_installation_values" USING btree ("installation_id","key") WHERE "mcp_installation_values"."user_id" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_installation_values_user_unique" ON "mcp_installation_values" USING btree ("installation_id","user_id","key") WHERE "mcp_installation_values"."user_id" is not null;--> statement-breakpoint
CREATE INDEX "mcp_installation_values_user_idx" ON "mcp_installation_values" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_installations_team_name_unique" ON "mcp_installations" USING btree ("team_id","name");--> statement-breakpoint
CREATE INDEX "mcp_installations_satellite_idx" ON "mcp_installations" USING btree ("satellite_id");--> statement-breakpoint
CREATE INDEX "mcp_installations_server_idx" ON "mcp_installations" USING btree ("server_id","track_latest");--> statement-breakpoint
CREATE INDEX "mcp_installations_version_idx" ON "mcp_installations" USING btree ("version_id");