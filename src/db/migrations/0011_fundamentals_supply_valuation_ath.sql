ALTER TABLE "coin_fundamentals" ADD COLUMN "total_supply" double precision;--> statement-breakpoint
ALTER TABLE "coin_fundamentals" ADD COLUMN "fully_diluted_valuation_usd" double precision;--> statement-breakpoint
ALTER TABLE "coin_fundamentals" ADD COLUMN "ath_usd" double precision;--> statement-breakpoint
ALTER TABLE "coin_fundamentals" ADD COLUMN "ath_time" bigint;