ALTER TABLE "candles" ADD COLUMN "demo" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "coin_fundamentals" ADD COLUMN "demo" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "coins" ADD COLUMN "demo" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "derivatives_readings" ADD COLUMN "demo" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "macro_points" ADD COLUMN "demo" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "news_items" ADD COLUMN "demo" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "signal_events" ADD COLUMN "demo" boolean DEFAULT false NOT NULL;--> statement-breakpoint
-- Rows written by the demo feed before this column existed: its sample datasets name themselves
-- (market-data/demo-data.ts), and a 15m coin that has sample fundamentals is a demo coin (the
-- demo feed always writes both; a real feeder's coins get real fundamentals or none).
UPDATE "derivatives_readings" SET "demo" = true WHERE "venue" IN ('DEMO-A (sample data)', 'DEMO-B (sample data)');--> statement-breakpoint
UPDATE "news_items" SET "demo" = true WHERE "source" = 'demo (sample data, not real news)' AND "id" LIKE 'demo-news-%';--> statement-breakpoint
UPDATE "macro_points" SET "demo" = true WHERE "source" = 'demo (sample data, not real figures)';--> statement-breakpoint
UPDATE "coins" SET "demo" = true WHERE "base_tf" = '15m' AND "symbol" IN (SELECT "symbol" FROM "coin_fundamentals" WHERE "source" = 'demo (sample data, not real figures)');--> statement-breakpoint
UPDATE "coin_fundamentals" SET "demo" = true WHERE "source" = 'demo (sample data, not real figures)';--> statement-breakpoint
UPDATE "candles" SET "demo" = true WHERE "symbol" IN (SELECT "symbol" FROM "coins" WHERE "demo");--> statement-breakpoint
UPDATE "signal_events" SET "demo" = true WHERE "symbol" IN (SELECT "symbol" FROM "coins" WHERE "demo");
