ALTER TABLE "hub_sessions" ADD COLUMN "flash" text;--> statement-breakpoint
ALTER TABLE "social_accounts" ADD COLUMN "page_account_id" text;