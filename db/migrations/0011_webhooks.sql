CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"message_id" uuid NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"round_attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"locked_until" timestamp with time zone,
	"job_id" text,
	"log" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"url" text NOT NULL,
	"events" text[],
	"description" text DEFAULT '' NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"secret_ciphertext" text NOT NULL,
	"previous_secret_ciphertext" text,
	"previous_secret_until" timestamp with time zone,
	"failing_since" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_messages" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"type" text NOT NULL,
	"subject_id" text NOT NULL,
	"account_id" text,
	"payload" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_message_id_webhook_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."webhook_messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD CONSTRAINT "webhook_messages_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("status","next_attempt_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" USING btree ("endpoint_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "webhook_deliveries_message_idx" ON "webhook_deliveries" USING btree ("message_id");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_user_idx" ON "webhook_endpoints" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_messages_user_idx" ON "webhook_messages" USING btree ("user_id","created_at");--> statement-breakpoint
-- The webhook outbox. Each state change that is an event writes its message, and one delivery per endpoint of
-- the user that takes it, in the transaction of the change itself, whoever writes it (API, delivery, sweep,
-- SQL by hand): a change that commits has its messages, and one that rolls back has none. A user without an
-- endpoint for the event gets no row. Messages take clock_timestamp(), so a target's event sorts before the
-- post event its change caused in the same statement.
CREATE OR REPLACE FUNCTION "webhooks_emit"(p_users uuid[], p_types text[], p_subjects text[], p_accounts text[]) RETURNS void
LANGUAGE sql AS $$
  WITH ev AS (
    SELECT e.user_id, e.type, e.subject_id, e.account_id, e.n
      FROM unnest(p_users, p_types, p_subjects, p_accounts) WITH ORDINALITY AS e(user_id, type, subject_id, account_id, n)
     WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.user_id = e.user_id AND w.enabled AND (w.events IS NULL OR e.type = ANY(w.events)))
  ), msg AS (
    INSERT INTO webhook_messages (user_id, type, subject_id, account_id, created_at)
    SELECT user_id, type, subject_id, account_id, clock_timestamp() FROM ev ORDER BY n
    RETURNING id, user_id, type, created_at
  )
  INSERT INTO webhook_deliveries (message_id, endpoint_id, user_id, next_attempt_at, created_at, updated_at)
  SELECT m.id, w.id, m.user_id, m.created_at, m.created_at, m.created_at
    FROM msg m JOIN webhook_endpoints w ON w.user_id = m.user_id AND w.enabled AND (w.events IS NULL OR m.type = ANY(w.events));
$$;
--> statement-breakpoint
-- Post events: the stored status reaching a final value (kept by the status triggers of 0004-0006).
CREATE OR REPLACE FUNCTION "posts_webhooks"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM webhook_endpoints) THEN
    PERFORM webhooks_emit(array_agg(a.user_id ORDER BY a.id), array_agg('post.' || a.status ORDER BY a.id), array_agg(a.id::text ORDER BY a.id), array_agg(NULL::text ORDER BY a.id))
       FROM added a JOIN gone g ON g.id = a.id
      WHERE a.status IN ('published', 'partially_published', 'failed', 'cancelled') AND a.status IS DISTINCT FROM g.status;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "posts_webhooks" AFTER UPDATE ON "posts" REFERENCING OLD TABLE AS gone NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION posts_webhooks();
--> statement-breakpoint
-- Target events: a target published, or failed for good (failed with no next attempt). Named to fire before
-- the post-status trigger, so a target's message precedes its post's.
CREATE OR REPLACE FUNCTION "deliveries_webhooks"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM webhook_endpoints) THEN
    PERFORM webhooks_emit(array_agg(e.user_id ORDER BY e.id), array_agg(e.type ORDER BY e.id), array_agg(e.post_id::text ORDER BY e.id), array_agg(e.account_id ORDER BY e.id))
       FROM (SELECT a.id, a.user_id, a.post_id, a.account_id,
                    CASE WHEN a.status = 'published' THEN 'post.target.published' ELSE 'post.target.failed' END AS type
               FROM added a JOIN gone g ON g.id = a.id
              WHERE (a.status = 'published' AND g.status <> 'published')
                 OR (a.status = 'failed' AND a.next_attempt_at IS NULL AND NOT (g.status = 'failed' AND g.next_attempt_at IS NULL))) e;
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "deliveries_outbox_webhooks" AFTER UPDATE ON "deliveries" REFERENCING OLD TABLE AS gone NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION deliveries_webhooks();
--> statement-breakpoint
-- account.reconnect_required: an active account's token found expired or revoked.
CREATE OR REPLACE FUNCTION "social_accounts_webhooks"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM webhooks_emit(ARRAY[NEW.user_id], ARRAY['account.reconnect_required'], ARRAY[NEW.id], ARRAY[NEW.id]);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "social_accounts_webhooks" AFTER UPDATE OF "token_status" ON "social_accounts" FOR EACH ROW
  WHEN (OLD.token_status = 'active' AND NEW.token_status <> 'active') EXECUTE FUNCTION social_accounts_webhooks();
--> statement-breakpoint
-- photo.job.succeeded, photo.job.failed: an asynchronous job (Prefer: respond-async) finishing.
CREATE OR REPLACE FUNCTION "photo_jobs_webhooks"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM webhooks_emit(ARRAY[NEW.user_id], ARRAY['photo.job.' || NEW.status], ARRAY[NEW.id::text], ARRAY[NULL::text]);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "photo_jobs_webhooks" AFTER UPDATE OF "status" ON "photo_jobs" FOR EACH ROW
  WHEN (NEW.async AND NEW.status IN ('succeeded', 'failed') AND OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION photo_jobs_webhooks();
