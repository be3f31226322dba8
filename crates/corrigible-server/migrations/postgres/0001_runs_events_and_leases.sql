-- Runs and their trace events, as in the SQLite store, plus the instances sharing the
-- database: each run belongs to the instance that executes it, and instances renew a lease
-- (heartbeat) so others can tell a crashed owner from a live one.
CREATE TABLE runs (
    id            TEXT PRIMARY KEY,
    created_at    BIGINT NOT NULL,             -- unix milliseconds
    finished_at   BIGINT,
    status        TEXT NOT NULL,               -- running | finished | failed | interrupted
    owner         TEXT NOT NULL DEFAULT '',
    prompt        TEXT NOT NULL,
    model         TEXT NOT NULL,
    protocol      TEXT NOT NULL,
    satisfied     BOOLEAN,
    stop_reason   TEXT,
    corrections   BIGINT NOT NULL DEFAULT 0,
    tool_calls    BIGINT NOT NULL DEFAULT 0,
    model_calls   BIGINT NOT NULL DEFAULT 0,
    input_tokens  BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    duration_ms   DOUBLE PRECISION,
    error_kind    TEXT,
    error         TEXT,
    report        TEXT                         -- the run report (JSON), once finished
);

CREATE INDEX runs_status ON runs (status);
CREATE INDEX runs_running_owner ON runs (owner) WHERE status = 'running';

CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq    BIGINT NOT NULL,                    -- from 1, in the order the events happened
    kind   TEXT NOT NULL,                      -- the event's `type`
    at     BIGINT NOT NULL,                    -- unix milliseconds
    data   TEXT NOT NULL,                      -- the trace event (JSON)
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE instances (
    id           TEXT PRIMARY KEY,
    heartbeat_at BIGINT NOT NULL               -- unix milliseconds, by the database's clock
);
