CREATE TABLE "oauth_connection_flows" (
	"id" text PRIMARY KEY NOT NULL,
	"state_digest" text NOT NULL,
	"session_id" text NOT NULL,
	"user_id" text NOT NULL,
	"team_id" text NOT NULL,
	"installation_id" text NOT NULL,
	"input_key" text NOT NULL,
	"owner" text NOT NULL,
	"issuer" text NOT NULL,
	"client_id" text NOT NULL,
	"redirect_uri" text NOT NULL,
	"code_verifier_sealed" text NOT NULL,
	"resource" text NOT NULL,
	"scopes" text NOT NULL,
	"return_to" text,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_connections" (
	"id" text PRIMARY KEY NOT NULL,
	"installation_id" text NOT NULL,
	"team_id" text NOT NULL,
	"user_id" text,
	"owner" text NOT NULL,
	"input_key" text NOT NULL,
	"issuer" text NOT NULL,
	"client_id" text NOT NULL,
	"status" text NOT NULL,
	"sealed" text NOT NULL,
	"refresh_at" timestamp with time zone,
	"token_revision" integer DEFAULT 0 NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	"lease_owner" text,
	"lease_until" timestamp with time zone,
	"connected_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "upstream_oauth_clients" (
	"issuer" text PRIMARY KEY NOT NULL,
	"method" text NOT NULL,
	"client_id" text NOT NULL,
	"client_secret_sealed" text,
	"token_endpoint_auth_method" text NOT NULL,
	"registered_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "oauth_connection_flows" ADD CONSTRAINT "oauth_connection_flows_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_connection_flows" ADD CONSTRAINT "oauth_connection_flows_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_connection_flows" ADD CONSTRAINT "oauth_connection_flows_installation_id_mcp_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."mcp_installations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_connections" ADD CONSTRAINT "oauth_connections_installation_id_mcp_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."mcp_installations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_connections" ADD CONSTRAINT "oauth_connections_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_connections" ADD CONSTRAINT "oauth_connections_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "oauth_connection_flows_state_unique" ON "oauth_connection_flows" USING btree ("state_digest");--> statement-breakpoint
CREATE INDEX "oauth_connection_flows_expires_idx" ON "oauth_connection_flows" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "oauth_connections_owner_unique" ON "oauth_connections" USING btree ("installation_id","input_key","owner");--> statement-breakpoint
CREATE INDEX "oauth_connections_refresh_idx" ON "oauth_connections" USING btree ("refresh_at");--> statement-breakpoint
CREATE INDEX "oauth_connections_user_idx" ON "oauth_connections" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "oauth_connections_team_idx" ON "oauth_connections" USING btree ("team_id");