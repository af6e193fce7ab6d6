-- The post status trigger on deliveries' updates runs once per statement instead of once per row: a batch
-- claim or a batch record of 16 targets refreshed 16 posts one by one (each a lock, an aggregate, an UPDATE of
-- posts and its count trigger), which made the batch record the database's largest cost in a burst of
-- scheduled posts. Now the statement's changed rows are read from its transition tables and their posts are
-- refreshed together. PostgreSQL takes no column list on a trigger with transition tables, so the filter of
-- the row trigger's WHEN (only the columns the status reads) moves into the function: a lock renewal or the
-- write-ahead mark finds nothing to refresh and returns.
--
-- And the status of one post is computed by PL/pgSQL, whose statement plans are kept for the connection: as
-- a LANGUAGE sql function with a FROM (which PostgreSQL does not inline) its query was planned again in every
-- statement that called it, a few milliseconds per trigger. The refresh computes it once per post (OFFSET 0
-- keeps the subquery from being merged, which evaluated it in the filter and again in the SET).
DROP TRIGGER "deliveries_post_status_update" ON "deliveries";--> statement-breakpoint
CREATE OR REPLACE FUNCTION "post_stored_status"(p_post uuid, p_scheduled_for timestamptz) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (
    select case
        when bool_or(d.status = 'publishing') then 'publishing'
        when bool_or(d.status = 'pending' or (d.status = 'failed' and d.next_attempt_at is not null)) then
          case when p_scheduled_for is not null and bool_and(d.attempts = 0) then 'scheduled' else 'queued' end
        when bool_and(d.status = 'published') then 'published'
        when bool_or(d.status = 'published') then 'partially_published'
        when bool_or(d.status = 'cancelled') then 'cancelled'
        else 'failed' end
      from deliveries d where d.post_id = p_post);
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "posts_refresh_status"(p_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM posts WHERE id = ANY(p_ids) ORDER BY id FOR UPDATE;
  UPDATE posts p SET status = s.status
    FROM (SELECT id, post_stored_status(id, scheduled_for) AS status FROM posts WHERE id = ANY(p_ids) OFFSET 0) s
    WHERE p.id = s.id AND p.status IS DISTINCT FROM s.status;
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "deliveries_refresh_post_status"() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  ids uuid[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    ids := ARRAY(SELECT DISTINCT post_id FROM added);
  ELSIF TG_OP = 'DELETE' THEN
    ids := ARRAY(SELECT DISTINCT post_id FROM gone);
  ELSE
    ids := ARRAY(
      SELECT DISTINCT v.post_id
        FROM gone o JOIN added n ON n.id = o.id
        CROSS JOIN LATERAL (VALUES (o.post_id), (n.post_id)) AS v(post_id)
       WHERE o.status IS DISTINCT FROM n.status
          OR (o.attempts = 0) IS DISTINCT FROM (n.attempts = 0)
          OR (o.next_attempt_at IS NULL) IS DISTINCT FROM (n.next_attempt_at IS NULL)
          OR o.post_id IS DISTINCT FROM n.post_id);
  END IF;
  IF cardinality(ids) > 0 THEN
    PERFORM posts_refresh_status(ids);
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "deliveries_post_status_update" AFTER UPDATE ON "deliveries" REFERENCING OLD TABLE AS gone NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION deliveries_refresh_post_status();
