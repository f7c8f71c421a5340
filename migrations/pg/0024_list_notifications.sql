-- Change notifications for the installation lists instances keep in memory (src/modules/installations/kept-lists.ts).
-- A list shows a team's installations with their values, the caller's own values, what satellites
-- reported of their instances, their OAuth connections, the satellites they are placed on and their
-- catalogue entries; every write to one of those rows sends, in its own transaction, the topic that
-- ends the lists built on it: `installations:<team id>`, `member:<user id>` for a change of someone's
-- teams, `catalogue` for any catalogue write. Teams and settings already notify (migration 0015).
CREATE FUNCTION service_notify_installations() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed record;
  team text;
BEGIN
  IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
  IF TG_TABLE_NAME = 'mcp_installations' OR TG_TABLE_NAME = 'oauth_connections' THEN
    team := changed.team_id;
  ELSIF TG_TABLE_NAME = 'team_members' THEN
    team := changed.team_id;
    PERFORM pg_notify('service_changes', 'member:' || changed.user_id);
  ELSE
    -- Values and reported states: the team of their installation (gone already when the
    -- installation's own delete cascaded here, which notified for it).
    SELECT i.team_id INTO team FROM mcp_installations i WHERE i.id = changed.installation_id;
  END IF;
  IF team IS NOT NULL THEN PERFORM pg_notify('service_changes', 'installations:' || team); END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER mcp_installations_notify AFTER INSERT OR UPDATE OR DELETE ON mcp_installations FOR EACH ROW EXECUTE FUNCTION service_notify_installations();
--> statement-breakpoint
CREATE TRIGGER mcp_installation_values_notify AFTER INSERT OR UPDATE OR DELETE ON mcp_installation_values FOR EACH ROW EXECUTE FUNCTION service_notify_installations();
--> statement-breakpoint
CREATE TRIGGER mcp_instance_states_notify AFTER INSERT OR UPDATE OR DELETE ON mcp_instance_states FOR EACH ROW EXECUTE FUNCTION service_notify_installations();
--> statement-breakpoint
CREATE TRIGGER oauth_connections_notify AFTER INSERT OR DELETE OR UPDATE OF status ON oauth_connections FOR EACH ROW EXECUTE FUNCTION service_notify_installations();
--> statement-breakpoint
CREATE TRIGGER team_members_notify AFTER INSERT OR UPDATE OR DELETE ON team_members FOR EACH ROW EXECUTE FUNCTION service_notify_installations();
--> statement-breakpoint
-- A satellite as the lists show it: what it is, and whether it is online. Going offline follows the
-- clock (90 s without a heartbeat), which a list's own lifetime covers; coming back is the first
-- heartbeat after such a silence, announced here. Other heartbeats announce nothing.
CREATE FUNCTION service_notify_satellite_view() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  team text;
BEGIN
  FOR team IN SELECT DISTINCT i.team_id FROM mcp_installations i WHERE i.satellite_id = NEW.id LOOP
    PERFORM pg_notify('service_changes', 'installations:' || team);
  END LOOP;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER satellites_notify_view AFTER UPDATE ON satellites FOR EACH ROW
  WHEN (
    (OLD.name, OLD.satellite_type, OLD.status, OLD.disabled_at, OLD.satellite_url, OLD.public_key, OLD.offline_at)
      IS DISTINCT FROM (NEW.name, NEW.satellite_type, NEW.status, NEW.disabled_at, NEW.satellite_url, NEW.public_key, NEW.offline_at)
    OR (NEW.last_heartbeat_at IS NOT NULL AND (OLD.last_heartbeat_at IS NULL OR NEW.last_heartbeat_at - OLD.last_heartbeat_at >= interval '90 seconds'))
  )
  EXECUTE FUNCTION service_notify_satellite_view();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "bump_catalogue_revision"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE catalogue_revision SET revision = revision + 1 WHERE id = 1;
  PERFORM pg_notify('service_changes', 'catalogue');
  RETURN NULL;
END $$;
