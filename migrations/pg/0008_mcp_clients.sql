ALTER TABLE "oauth_clients" ADD COLUMN "metadata" jsonb;--> statement-breakpoint
ALTER TABLE "oauth_requests" ADD COLUMN "prompt" text;