CREATE TABLE "feed_leases" (
	"symbol" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"generation" bigint DEFAULT 1 NOT NULL
);
