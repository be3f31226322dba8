-- Runs and their trace events. A run row is written when the run starts, its events as they
-- happen, and its report when it ends.
CREATE TABLE runs (
    id            TEXT PRIMARY KEY NOT NULL,
    created_at    INTEGER NOT NULL,            -- unix milliseconds
    finished_at   INTEGER,
    status        TEXT NOT NULL,               -- running | finished | failed | interrupted
    prompt        TEXT NOT NULL,
    model         TEXT NOT NULL,
    protocol      TEXT NOT NULL,
    satisfied     INTEGER,
    stop_reason   TEXT,
    corrections   INTEGER NOT NULL DEFAULT 0,
    tool_calls    INTEGER NOT NULL DEFAULT 0,
    model_calls   INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    duration_ms   REAL,
    error_kind    TEXT,
    error         TEXT,
    report        TEXT                         -- the run report (JSON), once finished
);

CREATE INDEX runs_status ON runs (status);

CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,                   -- from 1, in the order the events happened
    kind   TEXT NOT NULL,                      -- the event's `type`
    at     INTEGER NOT NULL,                   -- unix milliseconds
    data   TEXT NOT NULL,                      -- the trace event (JSON)
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
