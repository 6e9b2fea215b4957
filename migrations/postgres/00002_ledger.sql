-- +goose Up
CREATE TABLE ledger (
    id             BIGSERIAL PRIMARY KEY,
    session_id     TEXT NOT NULL,
    run_id         BIGINT NOT NULL,
    provider       TEXT NOT NULL,
    model          TEXT NOT NULL,
    attempt        INT NOT NULL,
    input_tokens   INT NOT NULL,
    output_tokens  INT NOT NULL,
    cost_usd       DOUBLE PRECISION NOT NULL,
    duration_ms    BIGINT NOT NULL,
    error          TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX ledger_session ON ledger (session_id, id);

-- +goose Down
DROP TABLE ledger;
