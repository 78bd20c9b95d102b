CREATE TABLE "page_view_windows" (
	"view_key" text PRIMARY KEY NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"views" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "alert_settings" ADD COLUMN "chat_verified" boolean DEFAULT false NOT NULL;