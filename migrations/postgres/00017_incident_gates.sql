-- +goose Up
-- The incident sweeper reads the incident cards every few seconds on
-- every replica: an index of those alone, not of every approval ever.
CREATE INDEX gates_incidents ON gates (created_at) WHERE kind = 'incident';

-- +goose Down
DROP INDEX gates_incidents;
