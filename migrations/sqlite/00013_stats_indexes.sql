-- +goose Up
-- The admin page's charts (GET /v1/admin/stats) count a window of
-- activity by time; these let each count read only the window's rows.
-- The runs and decided-gates indexes are partial: a row enters them once,
-- when it settles, so lease renewals and claims do not touch them.
CREATE INDEX receive_log_received ON receive_log (received_at);
CREATE INDEX runs_settled ON runs (updated_at) WHERE state IN ('done', 'failed', 'cancelled');
CREATE INDEX gates_created ON gates (created_at);
CREATE INDEX gates_decided ON gates (decided_at) WHERE state <> 'pending';

-- +goose Down
DROP INDEX gates_decided;
DROP INDEX gates_created;
DROP INDEX runs_settled;
DROP INDEX receive_log_received;
