CREATE TABLE "post_status_counts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "post_status_counts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"user_id" uuid NOT NULL,
	"status" text NOT NULL,
	"n" integer NOT NULL
);
--> statement-breakpoint
DROP INDEX "posts_user_created_idx";--> statement-breakpoint
ALTER TABLE "posts" ADD COLUMN "status" text DEFAULT 'failed' NOT NULL;--> statement-breakpoint
-- The post-level status as stored, from its deliveries, first match wins (a post without deliveries is
-- 'failed'). 'scheduled' is stored for "outstanding, none attempted yet, has a scheduled_for"; readers show
-- it as 'queued' once scheduled_for has passed, which no write marks.
CREATE FUNCTION "post_stored_status"(p_post uuid, p_scheduled_for timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  select case
      when bool_or(d.status = 'publishing') then 'publishing'
      when bool_or(d.status = 'pending' or (d.status = 'failed' and d.next_attempt_at is not null)) then
        case when p_scheduled_for is not null and bool_and(d.attempts = 0) then 'scheduled' else 'queued' end
      when bool_and(d.status = 'published') then 'published'
      when bool_or(d.status = 'published') then 'partially_published'
      when bool_or(d.status = 'cancelled') then 'cancelled'
      else 'failed' end
    from deliveries d where d.post_id = p_post
$$;--> statement-breakpoint
-- Stores the status of the given posts. The posts are locked first (in id order, so two writers never wait
-- on each other crosswise) and their deliveries read by the next statement, whose snapshot includes what a
-- concurrent writer committed while this one waited for the lock.
CREATE FUNCTION "posts_refresh_status"(p_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM posts WHERE id = ANY(p_ids) ORDER BY id FOR UPDATE;
  UPDATE posts p SET status = s.status
    FROM (SELECT id, post_stored_status(id, scheduled_for) AS status FROM posts WHERE id = ANY(p_ids)) s
    WHERE p.id = s.id AND p.status IS DISTINCT FROM s.status;
END $$;--> statement-breakpoint
CREATE FUNCTION "deliveries_refresh_post_status"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_LEVEL = 'ROW' THEN
    PERFORM posts_refresh_status(ARRAY[OLD.post_id, NEW.post_id]);
  ELSIF TG_OP = 'INSERT' THEN
    PERFORM posts_refresh_status(ARRAY(SELECT DISTINCT post_id FROM added));
  ELSE
    PERFORM posts_refresh_status(ARRAY(SELECT DISTINCT post_id FROM gone));
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
-- A change of scheduled_for or cancelled_at recomputes the post's own status (the row is already locked here).
CREATE FUNCTION "posts_status_on_change"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.status := post_stored_status(NEW.id, NEW.scheduled_for);
  RETURN NEW;
END $$;--> statement-breakpoint
-- Appends the per-user count deltas of a statement on posts: one row per user and status it changed.
CREATE FUNCTION "posts_count_status"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO post_status_counts (user_id, status, n) SELECT user_id, status, count(*) FROM added GROUP BY 1, 2;
  ELSIF TG_OP = 'DELETE' THEN
    -- Posts deleted with their user (already gone) leave nothing: the user's trigger drops its counts.
    INSERT INTO post_status_counts (user_id, status, n)
      SELECT g.user_id, g.status, -count(*) FROM gone g WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = g.user_id) GROUP BY 1, 2;
  ELSE
    INSERT INTO post_status_counts (user_id, status, n)
      SELECT c.user_id, c.status, sum(c.n) FROM (
        SELECT o.user_id, o.status, -1 AS n FROM gone o JOIN added a ON a.id = o.id WHERE o.status IS DISTINCT FROM a.status OR o.user_id IS DISTINCT FROM a.user_id
        UNION ALL
        SELECT a.user_id, a.status, 1 FROM gone o JOIN added a ON a.id = o.id WHERE o.status IS DISTINCT FROM a.status OR o.user_id IS DISTINCT FROM a.user_id
      ) c GROUP BY 1, 2 HAVING sum(c.n) <> 0;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
UPDATE "posts" SET "status" = post_stored_status("id", "scheduled_for");--> statement-breakpoint
INSERT INTO "post_status_counts" ("user_id", "status", "n") SELECT "user_id", "status", count(*) FROM "posts" GROUP BY 1, 2;--> statement-breakpoint
CREATE TRIGGER "deliveries_post_status_insert" AFTER INSERT ON "deliveries" REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION deliveries_refresh_post_status();--> statement-breakpoint
CREATE TRIGGER "deliveries_post_status_delete" AFTER DELETE ON "deliveries" REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION deliveries_refresh_post_status();--> statement-breakpoint
-- Row by row, and only for the columns the status reads: lock renewals and other bookkeeping cost nothing.
CREATE TRIGGER "deliveries_post_status_update" AFTER UPDATE ON "deliveries" FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR (OLD.attempts = 0) IS DISTINCT FROM (NEW.attempts = 0)
    OR (OLD.next_attempt_at IS NULL) IS DISTINCT FROM (NEW.next_attempt_at IS NULL) OR OLD.post_id IS DISTINCT FROM NEW.post_id)
  EXECUTE FUNCTION deliveries_refresh_post_status();--> statement-breakpoint
CREATE TRIGGER "posts_status_on_change" BEFORE UPDATE OF "scheduled_for", "cancelled_at" ON "posts"
  FOR EACH ROW EXECUTE FUNCTION posts_status_on_change();--> statement-breakpoint
CREATE TRIGGER "posts_count_insert" AFTER INSERT ON "posts" REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION posts_count_status();--> statement-breakpoint
CREATE TRIGGER "posts_count_update" AFTER UPDATE ON "posts" REFERENCING OLD TABLE AS gone NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION posts_count_status();--> statement-breakpoint
CREATE TRIGGER "posts_count_delete" AFTER DELETE ON "posts" REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION posts_count_status();--> statement-breakpoint
-- A deleted user's counts go with it (its posts are deleted first, by the foreign key's cascade).
CREATE FUNCTION "users_drop_post_counts"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM post_status_counts WHERE user_id IN (SELECT id FROM gone);
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "users_drop_post_counts" AFTER DELETE ON "users" REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION users_drop_post_counts();--> statement-breakpoint
CREATE INDEX "post_status_counts_user_idx" ON "post_status_counts" USING btree ("user_id","status");--> statement-breakpoint
CREATE INDEX "posts_user_status_created_idx" ON "posts" USING btree ("user_id","status","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "posts_user_created_idx" ON "posts" USING btree ("user_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);
