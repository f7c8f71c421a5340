CREATE TABLE "provider_states" (
	"id" text PRIMARY KEY NOT NULL,
	"digest" text NOT NULL,
	"return_to" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "provider_states_digest_unique" ON "provider_states" USING btree ("digest");--> statement-breakpoint
CREATE INDEX "provider_states_expires_idx" ON "provider_states" USING btree ("expires_at");