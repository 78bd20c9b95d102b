DROP TABLE "daily_usage" CASCADE;--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "usage_day" date;--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "calls_today" integer DEFAULT 0 NOT NULL;