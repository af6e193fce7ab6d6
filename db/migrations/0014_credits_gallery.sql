CREATE TABLE "credit_accounts" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"balance" integer DEFAULT 0 NOT NULL,
	"reserved" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "credit_accounts_within_balance" CHECK ("credit_accounts"."reserved" >= 0 and "credit_accounts"."balance" >= "credit_accounts"."reserved")
);
--> statement-breakpoint
CREATE TABLE "credit_holds" (
	"job_id" uuid NOT NULL,
	"item_index" integer NOT NULL,
	"user_id" uuid NOT NULL,
	"amount" integer NOT NULL,
	"state" text DEFAULT 'held' NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "credit_holds_job_id_item_index_pk" PRIMARY KEY("job_id","item_index")
);
--> statement-breakpoint
CREATE TABLE "credit_movements" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "credit_movements_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"user_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"amount" integer NOT NULL,
	"balance_after" integer NOT NULL,
	"job_id" uuid,
	"item_index" integer,
	"model" text,
	"resolution" text,
	"note" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "gallery_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"job_id" uuid NOT NULL,
	"item_index" integer NOT NULL,
	"label" text,
	"template_id" text,
	"scene_prompt" text,
	"model" text NOT NULL,
	"resolution" text NOT NULL,
	"aspect_ratio" text NOT NULL,
	"width" integer NOT NULL,
	"height" integer NOT NULL,
	"credits" integer NOT NULL,
	"usd" numeric(12, 4) NOT NULL,
	"inr" numeric(12, 2) NOT NULL,
	"storage_key" text NOT NULL,
	"thumb_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "credit_accounts" ADD CONSTRAINT "credit_accounts_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_holds" ADD CONSTRAINT "credit_holds_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "credit_movements" ADD CONSTRAINT "credit_movements_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "gallery_items" ADD CONSTRAINT "gallery_items_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "credit_holds_held_idx" ON "credit_holds" USING btree ("expires_at") WHERE state = 'held';--> statement-breakpoint
CREATE INDEX "credit_movements_user_idx" ON "credit_movements" USING btree ("user_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "credit_movements_charge_idx" ON "credit_movements" USING btree ("job_id","item_index");--> statement-breakpoint
CREATE UNIQUE INDEX "gallery_items_job_item_idx" ON "gallery_items" USING btree ("job_id","item_index");--> statement-breakpoint
CREATE INDEX "gallery_items_user_created_idx" ON "gallery_items" USING btree ("user_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);