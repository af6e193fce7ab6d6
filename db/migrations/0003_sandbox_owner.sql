CREATE TABLE "sandbox_account_faults" (
	"owner" text NOT NULL,
	"platform_account_id" text NOT NULL,
	"kind" text NOT NULL,
	"remaining" integer NOT NULL,
	CONSTRAINT "sandbox_account_faults_owner_platform_account_id_pk" PRIMARY KEY("owner","platform_account_id")
);
--> statement-breakpoint
DROP INDEX "sandbox_items_account_idx";--> statement-breakpoint
ALTER TABLE "sandbox_grants" ADD COLUMN "owner" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "sandbox_items" ADD COLUMN "owner" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "sandbox_tokens" ADD COLUMN "owner" text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX "sandbox_items_account_idx" ON "sandbox_items" USING btree ("owner","platform_account_id");