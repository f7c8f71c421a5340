CREATE TABLE "installation_tool_approvals" (
	"installation_id" text NOT NULL,
	"name" text NOT NULL,
	"hash" text NOT NULL,
	"definition" jsonb NOT NULL,
	"approved_by" text NOT NULL,
	"approved_at" timestamp with time zone NOT NULL,
	CONSTRAINT "installation_tool_approvals_installation_id_name_pk" PRIMARY KEY("installation_id","name")
);
--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD COLUMN "disabled_tools" jsonb;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD COLUMN "allowed_tools" jsonb;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD COLUMN "pin_tools" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "mcp_installations" ADD COLUMN "held_tools" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "installation_tool_approvals" ADD CONSTRAINT "installation_tool_approvals_installation_id_mcp_installations_id_fk" FOREIGN KEY ("installation_id") REFERENCES "public"."mcp_installations"("id") ON DELETE cascade ON UPDATE no action;