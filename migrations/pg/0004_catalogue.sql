CREATE TABLE "catalogue_revision" (
	"id" integer PRIMARY KEY NOT NULL,
	"revision" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mcp_categories" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"name_key" text NOT NULL,
	"description" text,
	"icon" text,
	"sort_order" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mcp_server_tags" (
	"server_id" text NOT NULL,
	"tag" text NOT NULL,
	CONSTRAINT "mcp_server_tags_server_id_tag_pk" PRIMARY KEY("server_id","tag")
);
--> statement-breakpoint
CREATE TABLE "mcp_server_versions" (
	"id" text PRIMARY KEY NOT NULL,
	"server_id" text NOT NULL,
	"version" text NOT NULL,
	"precedence" text NOT NULL,
	"prerelease" boolean NOT NULL,
	"status" text NOT NULL,
	"changelog" text,
	"release_date" timestamp with time zone,
	"packages" jsonb,
	"remotes" jsonb,
	"is_latest" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mcp_servers" (
	"seq" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "mcp_servers_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"id" text NOT NULL,
	"name" text NOT NULL,
	"sort_name" text NOT NULL,
	"slug" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"long_description" text,
	"category_id" text,
	"tags" jsonb NOT NULL,
	"language" text,
	"runtime" text,
	"language_key" text,
	"runtime_key" text,
	"transport_type" text NOT NULL,
	"status" text NOT NULL,
	"featured" boolean DEFAULT false NOT NULL,
	"visibility" text NOT NULL,
	"owner_team_id" text,
	"repository_url" text,
	"website_url" text,
	"icon_url" text,
	"author_name" text,
	"organization" text,
	"license" text,
	"packages" jsonb NOT NULL,
	"remotes" jsonb NOT NULL,
	"latest_version" text,
	"created_by" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"search_vector" "tsvector" GENERATED ALWAYS AS (setweight(to_tsvector('simple', name), 'A') || setweight(jsonb_to_tsvector('simple', tags, '["string"]'), 'B') || setweight(to_tsvector('simple', description), 'C')) STORED NOT NULL,
	CONSTRAINT "mcp_servers_id_unique" UNIQUE("id")
);
--> statement-breakpoint
ALTER TABLE "mcp_server_tags" ADD CONSTRAINT "mcp_server_tags_server_id_mcp_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."mcp_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_server_versions" ADD CONSTRAINT "mcp_server_versions_server_id_mcp_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."mcp_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_category_id_mcp_categories_id_fk" FOREIGN KEY ("category_id") REFERENCES "public"."mcp_categories"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_owner_team_id_teams_id_fk" FOREIGN KEY ("owner_team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_categories_name_unique" ON "mcp_categories" USING btree ("name_key");--> statement-breakpoint
CREATE INDEX "mcp_categories_order_idx" ON "mcp_categories" USING btree ("sort_order","name");--> statement-breakpoint
CREATE INDEX "mcp_server_tags_tag_idx" ON "mcp_server_tags" USING btree ("tag","server_id");--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_server_versions_precedence_unique" ON "mcp_server_versions" USING btree ("server_id","precedence");--> statement-breakpoint
CREATE INDEX "mcp_server_versions_order_idx" ON "mcp_server_versions" USING btree ("server_id","precedence" collate "C");--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_server_versions_one_latest" ON "mcp_server_versions" USING btree ("server_id") WHERE "mcp_server_versions"."is_latest";--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_slug_unique" ON "mcp_servers" USING btree ("slug");--> statement-breakpoint
CREATE INDEX "mcp_servers_name_idx" ON "mcp_servers" USING btree ("sort_name" collate "C","id");--> statement-breakpoint
CREATE INDEX "mcp_servers_created_idx" ON "mcp_servers" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "mcp_servers_updated_idx" ON "mcp_servers" USING btree ("updated_at","id");--> statement-breakpoint
CREATE INDEX "mcp_servers_category_idx" ON "mcp_servers" USING btree ("category_id");--> statement-breakpoint
CREATE INDEX "mcp_servers_status_idx" ON "mcp_servers" USING btree ("status");--> statement-breakpoint
CREATE INDEX "mcp_servers_language_idx" ON "mcp_servers" USING btree ("language_key");--> statement-breakpoint
CREATE INDEX "mcp_servers_runtime_idx" ON "mcp_servers" USING btree ("runtime_key");--> statement-breakpoint
CREATE INDEX "mcp_servers_owner_team_idx" ON "mcp_servers" USING btree ("owner_team_id");--> statement-breakpoint
CREATE INDEX "mcp_servers_visibility_idx" ON "mcp_servers" USING btree ("visibility","owner_team_id");--> statement-breakpoint
CREATE INDEX "mcp_servers_search_idx" ON "mcp_servers" USING gin ("search_vector");