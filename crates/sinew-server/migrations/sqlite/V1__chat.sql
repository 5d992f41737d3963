-- The chat tables before agent-backed conversations. Ids are UUID text, times RFC 3339 UTC text
-- (which sorts as time), JSON as text.
CREATE TABLE agent_definitions (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    model       TEXT NOT NULL,
    instruction TEXT NOT NULL,
    tools       TEXT NOT NULL,
    mcp_servers TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE TABLE chat_conversations (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE chat_messages (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT NOT NULL UNIQUE,
    conversation_id   TEXT NOT NULL REFERENCES chat_conversations (id) ON DELETE CASCADE,
    role              TEXT NOT NULL,
    content           TEXT NOT NULL,
    retrieval_context TEXT,
    created_at        TEXT NOT NULL
);
CREATE INDEX chat_messages_by_conversation ON chat_messages (conversation_id, seq);

CREATE TABLE agent_runs (
    id                  TEXT PRIMARY KEY,
    agent_definition_id TEXT REFERENCES agent_definitions (id) ON DELETE SET NULL,
    conversation_id     TEXT REFERENCES chat_conversations (id) ON DELETE SET NULL,
    agent_name          TEXT NOT NULL,
    status              TEXT NOT NULL,
    input               TEXT NOT NULL,
    output              TEXT,
    error               TEXT,
    started_at          TEXT NOT NULL,
    finished_at         TEXT
);
CREATE INDEX agent_runs_by_conversation ON agent_runs (conversation_id);

CREATE TABLE agent_run_messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    run_id     TEXT NOT NULL REFERENCES agent_runs (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    author     TEXT NOT NULL,
    content    TEXT NOT NULL,
    tool_calls TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX agent_run_messages_by_run ON agent_run_messages (run_id, seq);

CREATE TABLE agent_run_tool_calls (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    run_id      TEXT NOT NULL REFERENCES agent_runs (id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    input       TEXT NOT NULL,
    output      TEXT,
    error       TEXT,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX agent_run_tool_calls_by_run ON agent_run_tool_calls (run_id, seq);
