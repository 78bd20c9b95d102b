CREATE TABLE "password_links" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"account_id" bigint NOT NULL,
	"kind" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	CONSTRAINT "password_links_kind_check" CHECK ("password_links"."kind" IN ('setup','reset'))
);
--> statement-breakpoint
ALTER TABLE "password_links" ADD CONSTRAINT "password_links_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "password_links_account_idx" ON "password_links" USING btree ("account_id");--> statement-breakpoint
-- The links of both former tables stay valid: same token hash, account, expiry and use. Setup
-- links had no creation time; a setup link lived 24 hours, so it was made 24 hours before it expires.
INSERT INTO "password_links" ("token_hash", "account_id", "kind", "created_at", "expires_at", "used_at")
SELECT "token_hash", "account_id", 'setup', "expires_at" - interval '24 hours', "expires_at", "used_at" FROM "password_setup_tokens";--> statement-breakpoint
INSERT INTO "password_links" ("token_hash", "account_id", "kind", "created_at", "expires_at", "used_at")
SELECT "token_hash", "account_id", 'reset', "created_at", "expires_at", "used_at" FROM "password_resets";--> statement-breakpoint
DROP TABLE "password_setup_tokens" CASCADE;--> statement-breakpoint
DROP TABLE "password_resets" CASCADE;
