-- The chat tables before agent-backed conversations, in the schema the connection's search_path
-- names (`kb` unless configured).
CREATE TABLE agent_definitions (
    id          UUID PRIMARY KEY,
    name        TEXT NOT NULL,
    model       TEXT NOT NULL,
    instruction TEXT NOT NULL,
    tools       JSONB NOT NULL,
    mcp_servers JSONB NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE chat_conversations (
    id         UUID PRIMARY KEY,
    title      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE chat_messages (
    seq               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                UUID NOT NULL UNIQUE,
    conversation_id   UUID NOT NULL REFERENCES chat_conversations (id) ON DELETE CASCADE,
    role              TEXT NOT NULL,
    content           TEXT NOT NULL,
    retrieval_context JSONB,
    created_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX chat_messages_by_conversation ON chat_messages (conversation_id, seq);

CREATE TABLE agent_runs (
    id                  UUID PRIMARY KEY,
    agent_definition_id UUID REFERENCES agent_definitions (id) ON DELETE SET NULL,
    conversation_id     UUID REFERENCES chat_conversations (id) ON DELETE SET NULL,
    agent_name          TEXT NOT NULL,
    status              TEXT NOT NULL,
    input               TEXT NOT NULL,
    output              TEXT,
    error               TEXT,
    started_at          TIMESTAMPTZ NOT NULL,
    finished_at         TIMESTAMPTZ
);
CREATE INDEX agent_runs_by_conversation ON agent_runs (conversation_id);

CREATE TABLE agent_run_messages (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         UUID NOT NULL UNIQUE,
    run_id     UUID NOT NULL REFERENCES agent_runs (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    author     TEXT NOT NULL,
    content    TEXT NOT NULL,
    tool_calls JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX agent_run_messages_by_run ON agent_run_messages (run_id, seq);

CREATE TABLE agent_run_tool_calls (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          UUID NOT NULL UNIQUE,
    run_id      UUID NOT NULL REFERENCES agent_runs (id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    input       JSONB NOT NULL,
    output      JSONB,
    error       TEXT,
    status      TEXT NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ
);
CREATE INDEX agent_run_tool_calls_by_run ON agent_run_tool_calls (run_id, seq);
