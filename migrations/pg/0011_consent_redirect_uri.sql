ALTER TABLE "oauth_consents" ADD COLUMN "redirect_uris" text;--> statement-breakpoint
CREATE INDEX "oauth_consents_client_idx" ON "oauth_consents" USING btree ("client_id");