-- Agent-backed conversations (spec 001): existing conversations stay plain (NULL).
ALTER TABLE chat_conversations ADD COLUMN agent_definition_id UUID REFERENCES agent_definitions (id);
CREATE INDEX chat_conversations_by_agent ON chat_conversations (agent_definition_id);
