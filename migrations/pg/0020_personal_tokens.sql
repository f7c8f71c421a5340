CREATE TABLE "personal_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"team_id" text,
	"name" text NOT NULL,
	"scope" text NOT NULL,
	"digest" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"last_used_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "personal_tokens" ADD CONSTRAINT "personal_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "personal_tokens" ADD CONSTRAINT "personal_tokens_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "personal_tokens_digest_unique" ON "personal_tokens" USING btree ("digest");--> statement-breakpoint
CREATE INDEX "personal_tokens_user_idx" ON "personal_tokens" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "personal_tokens_team_idx" ON "personal_tokens" USING btree ("team_id");--> statement-breakpoint
CREATE INDEX "personal_tokens_expires_idx" ON "personal_tokens" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "personal_tokens_created_idx" ON "personal_tokens" USING btree ("created_at");