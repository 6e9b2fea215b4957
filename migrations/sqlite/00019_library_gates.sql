-- +goose Up
-- Each replica's uploads service looks for approved library cards whose
-- file was not yet added (a crash between the decision and the add):
-- an index of those cards alone, not of every approval ever.
CREATE INDEX gates_library ON gates (state, created_at) WHERE kind = 'library';

-- +goose Down
DROP INDEX gates_library;
