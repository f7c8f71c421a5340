CREATE TABLE "tool_call_batches" (
	"satellite_id" text NOT NULL,
	"batch_id" text NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	CONSTRAINT "tool_call_batches_satellite_id_batch_id_pk" PRIMARY KEY("satellite_id","batch_id")
);
--> statement-breakpoint
CREATE TABLE "tool_call_hours" (
	"team_id" text NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"installation_id" text NOT NULL,
	"user_id" text NOT NULL,
	"tool" text NOT NULL,
	"calls" integer NOT NULL,
	"ok" integer NOT NULL,
	"error" integer NOT NULL,
	"refused" integer NOT NULL,
	"duration_ms_sum" bigint NOT NULL,
	CONSTRAINT "tool_call_hours_team_id_hour_installation_id_user_id_tool_pk" PRIMARY KEY("team_id","hour","installation_id","user_id","tool")
);
--> statement-breakpoint
CREATE TABLE "tool_calls" (
	"id" text PRIMARY KEY NOT NULL,
	"satellite_id" text NOT NULL,
	"instance_id" text NOT NULL,
	"installation_id" text NOT NULL,
	"team_id" text NOT NULL,
	"user_id" text,
	"client_id" text,
	"tool" text NOT NULL,
	"outcome" text NOT NULL,
	"duration_ms" integer NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "tool_call_batches_received_idx" ON "tool_call_batches" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "tool_call_hours_hour_idx" ON "tool_call_hours" USING btree ("hour");--> statement-breakpoint
CREATE INDEX "tool_calls_installation_at_idx" ON "tool_calls" USING btree ("installation_id","at");--> statement-breakpoint
CREATE INDEX "tool_calls_team_at_idx" ON "tool_calls" USING btree ("team_id","at");--> statement-breakpoint
CREATE INDEX "tool_calls_at_idx" ON "tool_calls" USING btree ("at");