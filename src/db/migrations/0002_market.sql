CREATE TABLE "candles" (
	"symbol" text NOT NULL,
	"tf" text NOT NULL,
	"open_time" bigint NOT NULL,
	"open" double precision NOT NULL,
	"high" double precision NOT NULL,
	"low" double precision NOT NULL,
	"close" double precision NOT NULL,
	"volume" double precision NOT NULL,
	"closed" boolean NOT NULL,
	CONSTRAINT "candles_symbol_tf_open_time_pk" PRIMARY KEY("symbol","tf","open_time")
);
--> statement-breakpoint
CREATE TABLE "coins" (
	"symbol" text PRIMARY KEY NOT NULL,
	"base_tf" text NOT NULL,
	"last_update_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "series_state" (
	"symbol" text NOT NULL,
	"tf" text NOT NULL,
	"state" jsonb NOT NULL,
	"last_closed_open_time" bigint,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "series_state_symbol_tf_pk" PRIMARY KEY("symbol","tf")
);
