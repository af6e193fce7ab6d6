-- A post's status is refreshed only where it changed. Every statement that inserts or changes deliveries
-- refreshes its posts' stored status (0004, 0005), and most of those refreshes change nothing: creating a post
-- inserts it with the status its new deliveries give it, and the write-ahead mark or a lock renewal leaves the
-- status as it was. The UPDATE ran anyway, matched no row and still fired the posts' statement-level count
-- trigger; under post creation that no-op refresh was half of the create statement's time in the database.
-- Now the posts are locked as before, their statuses are computed in a statement of their own (a fresh
-- snapshot under the lock, as the UPDATE had), and only the posts whose status differs are updated.
CREATE OR REPLACE FUNCTION "posts_refresh_status"(p_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  changed_ids uuid[];
  changed_statuses text[];
BEGIN
  PERFORM 1 FROM posts WHERE id = ANY(p_ids) ORDER BY id FOR UPDATE;
  SELECT array_agg(c.id), array_agg(c.status) INTO changed_ids, changed_statuses
    FROM (SELECT id, status AS stored, post_stored_status(id, scheduled_for) AS status FROM posts WHERE id = ANY(p_ids) OFFSET 0) c
   WHERE c.stored IS DISTINCT FROM c.status;
  IF changed_ids IS NOT NULL THEN
    UPDATE posts p SET status = u.status FROM unnest(changed_ids, changed_statuses) AS u(id, status) WHERE p.id = u.id;
  END IF;
END $$;
