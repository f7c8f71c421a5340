ALTER TABLE "plugin_items" ADD COLUMN "owner_id" text;--> statement-breakpoint
ALTER TABLE "plugin_items" ADD CONSTRAINT "plugin_items_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "plugin_items_owner_idx" ON "plugin_items" USING btree ("plugin_id","collection","owner_id","id");