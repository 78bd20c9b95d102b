CREATE TABLE "payments" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "payments_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"account_id" bigint,
	"kind" text NOT NULL,
	"stripe_event_id" text NOT NULL,
	"checkout_session_id" text,
	"payment_intent_id" text,
	"invoice_id" text,
	"subscription_id" text,
	"charge_id" text,
	"dispute_id" text,
	"amount" bigint,
	"currency" text,
	"tokens" bigint DEFAULT 0 NOT NULL,
	"shortfall" bigint DEFAULT 0 NOT NULL,
	"ledger_entry_id" bigint,
	"detail" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payments_kind_check" CHECK ("payments"."kind" IN ('pack','subscription','refund','dispute'))
);
--> statement-breakpoint
CREATE TABLE "stripe_events" (
	"event_id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"event_created" timestamp with time zone NOT NULL,
	"outcome" text NOT NULL,
	"processed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "stripe_subscriptions" (
	"subscription_id" text PRIMARY KEY NOT NULL,
	"account_id" bigint NOT NULL,
	"customer_id" text,
	"plan" text,
	"plan_version" timestamp with time zone,
	"status" text,
	"paid_through" timestamp with time zone,
	"ended_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "stripe_customer_id" text;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_ledger_entry_id_ledger_entries_id_fk" FOREIGN KEY ("ledger_entry_id") REFERENCES "public"."ledger_entries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "stripe_subscriptions" ADD CONSTRAINT "stripe_subscriptions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payments_account_idx" ON "payments" USING btree ("account_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "payments_pack_session_key" ON "payments" USING btree ("checkout_session_id") WHERE "payments"."kind" = 'pack';--> statement-breakpoint
CREATE UNIQUE INDEX "payments_invoice_key" ON "payments" USING btree ("invoice_id") WHERE "payments"."kind" = 'subscription';--> statement-breakpoint
CREATE UNIQUE INDEX "payments_dispute_key" ON "payments" USING btree ("dispute_id") WHERE "payments"."kind" = 'dispute';--> statement-breakpoint
CREATE INDEX "payments_payment_intent_idx" ON "payments" USING btree ("payment_intent_id");--> statement-breakpoint
CREATE INDEX "stripe_subscriptions_account_idx" ON "stripe_subscriptions" USING btree ("account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "accounts_stripe_customer_key" ON "accounts" USING btree ("stripe_customer_id");