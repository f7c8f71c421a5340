-- Change notifications for what instances keep in memory about credentials (src/db/feed/kept-answers.ts).
-- Each trigger sends, in the writing transaction, the topic that ends the kept answers built on the
-- row, so that every writer is heard by every instance when it commits: the service itself (which
-- also tells its own instance at once), a command-line tool, or an operator's SQL. The payloads are
-- the topics of src/db/feed/topics.ts, on the channel of src/db/feed/pg-changes.ts. Identical notifications of
-- one transaction are delivered once.
CREATE FUNCTION service_notify_row_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed record;
BEGIN
  IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
  IF TG_TABLE_NAME = 'users' THEN
    PERFORM pg_notify('service_changes', 'user:' || changed.id);
  ELSIF TG_TABLE_NAME = 'sessions' THEN
    PERFORM pg_notify('service_changes', 'session:' || changed.id);
  ELSIF TG_TABLE_NAME = 'oauth_tokens' THEN
    PERFORM pg_notify('service_changes', 'token:' || changed.id);
  ELSIF TG_TABLE_NAME = 'teams' THEN
    PERFORM pg_notify('service_changes', 'team:' || changed.id);
    -- A default team is part of its owner's answers, also when it appears.
    IF changed.is_default THEN PERFORM pg_notify('service_changes', 'user:' || changed.owner_id); END IF;
  ELSIF TG_TABLE_NAME = 'satellites' THEN
    PERFORM pg_notify('service_changes', 'satellite:' || changed.id);
  ELSE
    PERFORM pg_notify('service_changes', 'settings');
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER users_notify AFTER UPDATE OR DELETE ON users FOR EACH ROW EXECUTE FUNCTION service_notify_row_change();
--> statement-breakpoint
CREATE TRIGGER sessions_notify AFTER UPDATE OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION service_notify_row_change();
--> statement-breakpoint
CREATE TRIGGER oauth_tokens_notify AFTER UPDATE OR DELETE ON oauth_tokens FOR EACH ROW EXECUTE FUNCTION service_notify_row_change();
--> statement-breakpoint
CREATE TRIGGER teams_notify AFTER INSERT OR UPDATE OR DELETE ON teams FOR EACH ROW EXECUTE FUNCTION service_notify_row_change();
--> statement-breakpoint
-- Heartbeats update satellites all the time: only what a key check answers is announced.
CREATE TRIGGER satellites_notify AFTER UPDATE ON satellites FOR EACH ROW
  WHEN ((OLD.key_digest, OLD.disabled_at, OLD.team_id) IS DISTINCT FROM (NEW.key_digest, NEW.disabled_at, NEW.team_id))
  EXECUTE FUNCTION service_notify_row_change();
--> statement-breakpoint
CREATE TRIGGER satellites_notify_delete AFTER DELETE ON satellites FOR EACH ROW EXECUTE FUNCTION service_notify_row_change();
--> statement-breakpoint
CREATE TRIGGER settings_notify AFTER INSERT OR UPDATE OR DELETE ON settings FOR EACH ROW EXECUTE FUNCTION service_notify_row_change();
