-- ledger_entries_append_only: the readable source of the function in force (last set by migration 0001).
-- A change here ships as a new custom migration made from this file (see src/db/functions/README.md);
-- test/integration/db-functions.test.ts fails while the migrated database and this file differ.
--
-- Money moves only through these functions. Each runs as one statement from the client, so
-- every check-and-charge is one transaction and one round trip, serialised per account by
-- the account row lock (exact under any concurrency: no overspend, no lost or double count).

-- The ledger is append-only: corrections are new 'adjustment' rows, never edits.
CREATE OR REPLACE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entries is append-only';
END $$;
