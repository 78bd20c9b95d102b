CREATE TABLE "idempotent_calls" (
	"key_hash" text NOT NULL,
	"idempotency_key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"response" "bytea" NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "idempotent_calls_key_hash_idempotency_key_pk" PRIMARY KEY("key_hash","idempotency_key")
);
--> statement-breakpoint
CREATE INDEX "idempotent_calls_created_idx" ON "idempotent_calls" USING btree ("created_at");