CREATE TABLE "coin_fundamentals" (
	"symbol" text PRIMARY KEY NOT NULL,
	"time" bigint NOT NULL,
	"circulating_supply" double precision NOT NULL,
	"max_supply" double precision,
	"market_cap_usd" double precision NOT NULL,
	"rank" integer,
	"source" text NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "derivatives_readings" (
	"symbol" text NOT NULL,
	"venue" text NOT NULL,
	"time" bigint NOT NULL,
	"funding_rate" double precision,
	"open_interest_usd" double precision,
	"long_short_ratio" double precision,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "derivatives_readings_symbol_venue_pk" PRIMARY KEY("symbol","venue")
);
--> statement-breakpoint
CREATE TABLE "free_call_windows" (
	"key_hash" text PRIMARY KEY NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"calls" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "macro_points" (
	"series" text NOT NULL,
	"time" bigint NOT NULL,
	"value" double precision NOT NULL,
	"unit" text NOT NULL,
	"source" text NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "macro_points_series_time_pk" PRIMARY KEY("series","time")
);
--> statement-breakpoint
CREATE TABLE "news_items" (
	"id" text PRIMARY KEY NOT NULL,
	"time" bigint NOT NULL,
	"title" text NOT NULL,
	"source" text NOT NULL,
	"url" text NOT NULL,
	"coins" text[] NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "macro_points_time_idx" ON "macro_points" USING btree ("time","series");--> statement-breakpoint
CREATE INDEX "news_items_time_idx" ON "news_items" USING btree ("time","id");