CREATE TABLE "charge_attempts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"results" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
