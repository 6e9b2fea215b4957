-- +goose Up
-- A turn's cost is summed by run at every settle (store.RunCost): by run,
-- not by reading the session's whole ledger, so it stays flat with age.
CREATE INDEX ledger_run ON ledger (run_id);

-- +goose Down
DROP INDEX ledger_run;
