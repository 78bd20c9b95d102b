CREATE TABLE "watch_streams" (
	"session_token_hash" text PRIMARY KEY NOT NULL,
	"stream_id" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "watchlists" (
	"account_id" bigint PRIMARY KEY NOT NULL,
	"symbols" text[] NOT NULL,
	"timeframes" text[] NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "watch_streams" ADD CONSTRAINT "watch_streams_session_token_hash_web_sessions_token_hash_fk" FOREIGN KEY ("session_token_hash") REFERENCES "public"."web_sessions"("token_hash") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "watchlists" ADD CONSTRAINT "watchlists_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;