CREATE TABLE "plugin_items" (
	"plugin_id" text NOT NULL,
	"collection" text NOT NULL,
	"id" text NOT NULL,
	"document" jsonb NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "plugin_items_plugin_id_collection_id_pk" PRIMARY KEY("plugin_id","collection","id")
);
