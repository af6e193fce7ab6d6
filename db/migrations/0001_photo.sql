CREATE TABLE "photo_jobs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"idempotency_key" text,
	"fingerprint" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"async" boolean DEFAULT false NOT NULL,
	"request" jsonb NOT NULL,
	"result" jsonb,
	"response_status" integer,
	"error_code" text,
	"error_message" text,
	"locked_until" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
DROP INDEX "generations_user_idx";--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "job_id" uuid;--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "provider" text DEFAULT 'local' NOT NULL;--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "item_index" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "generations" ADD COLUMN "label" text;--> statement-breakpoint
ALTER TABLE "photo_jobs" ADD CONSTRAINT "photo_jobs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "photo_jobs_user_key_idx" ON "photo_jobs" USING btree ("user_id","idempotency_key");--> statement-breakpoint
CREATE INDEX "photo_jobs_user_created_idx" ON "photo_jobs" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "photo_jobs_due_idx" ON "photo_jobs" USING btree ("status","locked_until");--> statement-breakpoint
CREATE UNIQUE INDEX "generations_job_item_idx" ON "generations" USING btree ("job_id","item_index");--> statement-breakpoint
CREATE INDEX "generations_user_idx" ON "generations" USING btree ("user_id","created_at");