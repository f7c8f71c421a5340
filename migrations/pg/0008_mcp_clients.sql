ALTER TABLE "oauth_clients" ADD COLUMN "metadata" jsonb;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD COLUMN "resource" text;--> statement-breakpoint
ALTER TABLE "oauth_requests" ADD COLUMN "prompt" text;--> statement-breakpoint
ALTER TABLE "oauth_requests" ADD COLUMN "resource" text;--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD COLUMN "resource" text;