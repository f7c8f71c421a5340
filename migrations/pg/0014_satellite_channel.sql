CREATE TABLE "mcp_instance_logs" (
	"id" text PRIMARY KEY NOT NULL,
	"instance_id" text NOT NULL,
	"installation_id" text NOT NULL,
	"user_id" text,
	"at" timestamp with time zone NOT NULL,
	"stream" text NOT NULL,
	"text" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mcp_instance_states" (
	"instance_id" text PRIMARY KEY NOT NULL,
	"installation_id" text NOT NULL,
	"user_id" text,
	"satellite_id" text NOT NULL,
	"spec_revision" integer NOT NULL,
	"spec_hash" text NOT NULL,
	"phase" text NOT NULL,
	"message" text,
	"started_at" timestamp with time zone,
	"tools" jsonb NOT NULL,
	"reported_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "satellites" ADD COLUMN "public_key" text;--> statement-breakpoint
ALTER TABLE "satellites" ADD COLUMN "desired_stamp" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "mcp_instance_logs" ADD CONSTRAINT "mcp_instance_logs_installation_id_mcp_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."mcp_installations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_instance_logs" ADD CONSTRAINT "mcp_instance_logs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_instance_states" ADD CONSTRAINT "mcp_instance_states_installation_id_mcp_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."mcp_installations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_instance_states" ADD CONSTRAINT "mcp_instance_states_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_instance_states" ADD CONSTRAINT "mcp_instance_states_satellite_id_satellites_id_fk" FOREIGN KEY ("satellite_id") REFERENCES "public"."satellites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "mcp_instance_logs_instance_idx" ON "mcp_instance_logs" USING btree ("instance_id","id");--> statement-breakpoint
CREATE INDEX "mcp_instance_logs_installation_idx" ON "mcp_instance_logs" USING btree ("installation_id","id");--> statement-breakpoint
CREATE INDEX "mcp_instance_states_installation_idx" ON "mcp_instance_states" USING btree ("installation_id");