CREATE TABLE "photo_job_items" (
	"job_id" uuid NOT NULL,
	"item_index" integer NOT NULL,
	"prediction_id" text,
	"status" text DEFAULT 'predicting' NOT NULL,
	"check_after" timestamp with time zone,
	"result" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "photo_job_items_job_id_item_index_pk" PRIMARY KEY("job_id","item_index")
);
--> statement-breakpoint
CREATE TABLE "photo_webhook_deliveries" (
	"webhook_id" text PRIMARY KEY NOT NULL,
	"prediction_id" text,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "photo_jobs" ADD COLUMN "dispatched_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "photo_job_items" ADD CONSTRAINT "photo_job_items_job_id_photo_jobs_id_fk" FOREIGN KEY ("job_id") REFERENCES "public"."photo_jobs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "photo_job_items_prediction_idx" ON "photo_job_items" USING btree ("prediction_id");--> statement-breakpoint
CREATE INDEX "photo_job_items_due_idx" ON "photo_job_items" USING btree ("status","check_after");--> statement-breakpoint
CREATE INDEX "photo_webhook_deliveries_received_idx" ON "photo_webhook_deliveries" USING btree ("received_at");