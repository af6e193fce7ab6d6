-- The retention purges find the oldest rows by an index of their creation time: posts (the sweep, every 30 s
-- on Node) and webhook messages (every minute). Without one each purge read the whole table, a cost that grew
-- with everything the service holds. The indexes are built inside the migration's transaction (writes to the two
-- tables wait for the build): on a large database, apply it at a quiet time.
CREATE INDEX "posts_created_idx" ON "posts" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "webhook_messages_created_idx" ON "webhook_messages" USING btree ("created_at");