-- +goose Up
-- The approvals of a gate that needs more than one person's
-- (GATEHOUSE_APPROVERS_NEEDED): one row per person, so the same person
-- pressing twice counts once. The gate's own row stays the one decision.
CREATE TABLE gate_approvals (
	gate_id TEXT NOT NULL REFERENCES gates (id) ON DELETE CASCADE,
	person TEXT NOT NULL,
	by_name TEXT NOT NULL,
	surface TEXT NOT NULL,
	needed INTEGER NOT NULL,
	at INTEGER NOT NULL,
	PRIMARY KEY (gate_id, person)
);

-- +goose Down
DROP TABLE gate_approvals;
