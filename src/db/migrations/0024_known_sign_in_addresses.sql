CREATE TABLE "known_sign_in_addresses" (
	"account_id" bigint NOT NULL,
	"address_hash" text NOT NULL,
	"last_sign_in_at" timestamp with time zone NOT NULL,
	CONSTRAINT "known_sign_in_addresses_account_id_address_hash_pk" PRIMARY KEY("account_id","address_hash")
);
--> statement-breakpoint
ALTER TABLE "known_sign_in_addresses" ADD CONSTRAINT "known_sign_in_addresses_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;