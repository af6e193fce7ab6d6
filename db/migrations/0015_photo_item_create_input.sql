ALTER TABLE "photo_job_items" ADD COLUMN "create_input_url" text;--> statement-breakpoint
ALTER TABLE "photo_job_items" ADD COLUMN "create_sent_at" timestamp with time zone;