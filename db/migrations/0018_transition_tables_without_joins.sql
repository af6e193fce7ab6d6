-- The statement triggers compare a statement's old and new rows with set operations instead of joining the two
-- transition tables on id. PostgreSQL keeps no statistics of a transition table, and a plan made while one
-- held a row or two joins them by a nested loop: every old row against every new one, a quarter of a million
-- comparisons for a batch of 512 deliveries. EXCEPT ALL is always hashed or sorted. A row's id, owner, post
-- and account never change, so the versions of one row differ only in the columns compared.
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
    -- The versions, old and new, of the rows whose status-relevant columns changed.
    ids := ARRAY(
      SELECT DISTINCT c.post_id FROM (
        (SELECT id, post_id, status, attempts = 0, next_attempt_at IS NULL FROM gone
         EXCEPT ALL
         SELECT id, post_id, status, attempts = 0, next_attempt_at IS NULL FROM added)
        UNION ALL
        (SELECT id, post_id, status, attempts = 0, next_attempt_at IS NULL FROM added
         EXCEPT ALL
         SELECT id, post_id, status, attempts = 0, next_attempt_at IS NULL FROM gone)
      ) c(id, post_id, status, first_attempt, unscheduled));
  END IF;
  IF cardinality(ids) > 0 THEN
    PERFORM posts_refresh_status(ids);
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "posts_count_status"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO post_status_counts (user_id, status, n) SELECT user_id, status, count(*) FROM added GROUP BY 1, 2;
  ELSIF TG_OP = 'DELETE' THEN
    -- Posts deleted with their user (already gone) leave nothing: the user's trigger drops its counts.
    INSERT INTO post_status_counts (user_id, status, n)
      SELECT g.user_id, g.status, -count(*) FROM gone g WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = g.user_id) GROUP BY 1, 2;
  ELSE
    -- A changed row counts -1 for its old (user, status) and +1 for its new one.
    INSERT INTO post_status_counts (user_id, status, n)
      SELECT c.user_id, c.status, sum(c.n) FROM (
        SELECT o.user_id, o.status, -1 AS n FROM (SELECT id, user_id, status FROM gone EXCEPT ALL SELECT id, user_id, status FROM added) o
        UNION ALL
        SELECT a.user_id, a.status, 1 FROM (SELECT id, user_id, status FROM added EXCEPT ALL SELECT id, user_id, status FROM gone) a
      ) c GROUP BY 1, 2 HAVING sum(c.n) <> 0;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "posts_webhooks"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM webhook_endpoints) THEN
    PERFORM webhooks_emit(array_agg(a.user_id ORDER BY a.id), array_agg('post.' || a.status ORDER BY a.id), array_agg(a.id::text ORDER BY a.id), array_agg(NULL::text ORDER BY a.id))
       FROM (SELECT id, user_id, status FROM added WHERE status IN ('published', 'partially_published', 'failed', 'cancelled')
             EXCEPT ALL
             SELECT id, user_id, status FROM gone) a;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
-- A target's final state: published, or failed with no next attempt; an event when a row reaches one it was not in.
CREATE OR REPLACE FUNCTION "deliveries_webhooks"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM webhook_endpoints) THEN
    PERFORM webhooks_emit(array_agg(e.user_id ORDER BY e.id), array_agg(e.type ORDER BY e.id), array_agg(e.post_id::text ORDER BY e.id), array_agg(e.account_id ORDER BY e.id))
       FROM (SELECT id, user_id, post_id, account_id, type FROM (
               SELECT id, user_id, post_id, account_id,
                      CASE WHEN status = 'published' THEN 'post.target.published'
                           WHEN status = 'failed' AND next_attempt_at IS NULL THEN 'post.target.failed' END AS type
                 FROM added
               EXCEPT ALL
               SELECT id, user_id, post_id, account_id,
                      CASE WHEN status = 'published' THEN 'post.target.published'
                           WHEN status = 'failed' AND next_attempt_at IS NULL THEN 'post.target.failed' END
                 FROM gone) f
              WHERE type IS NOT NULL) e;
  END IF;
  RETURN NULL;
END $$;
