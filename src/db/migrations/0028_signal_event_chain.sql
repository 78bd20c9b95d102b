ALTER TABLE "signal_events" ADD COLUMN "chain_prev" text;--> statement-breakpoint
ALTER TABLE "signal_events" ADD COLUMN "chain_hash" text;--> statement-breakpoint
CREATE UNIQUE INDEX "signal_events_chain_prev_key" ON "signal_events" USING btree ("chain_prev") WHERE chain_prev IS NOT NULL;--> statement-breakpoint
CREATE INDEX "signal_events_chained_idx" ON "signal_events" USING btree ("seq") WHERE chain_hash IS NOT NULL;--> statement-breakpoint
CREATE INDEX "signal_events_unchained_idx" ON "signal_events" USING btree ("seq") WHERE live AND chain_hash IS NULL;