"""adk-python's side of the session-store interop tests (`tests/it/sql_sessions.rs`).

Runs google-adk 2.13.0's own session services over a database sinew-adk also opens:

    adk_sessions.py write SERVICE TARGET SESSION_ID EVENTS_JSON
        Creates session SESSION_ID (app `interop`, user `u1`) with state in every scope, appends
        the events of EVENTS_JSON (a JSON array of camelCase events) in order, and prints the
        session as adk-python reads it back.
    adk_sessions.py read SERVICE TARGET SESSION_ID
        Prints the session as adk-python reads it (pydantic validates every event on the way),
        appends one more event to it, and prints the session again.

SERVICE is `database` (DatabaseSessionService; TARGET is an SQLAlchemy URL, with `?schema=NAME`
to work in a PostgreSQL schema) or `sqlite` (the stdlib SqliteSessionService; TARGET is a path).
Output: one JSON object per line, the session in the REST API's camelCase form.
"""

import asyncio
import json
import sys
import time

from google.adk.events.event import Event
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

APP, USER = "interop", "u1"


def service(kind: str, target: str):
    if kind == "sqlite":
        return SqliteSessionService(target)
    url, _, schema = target.partition("?schema=")
    if schema:
        return DatabaseSessionService(url, connect_args={"server_settings": {"search_path": schema}})
    return DatabaseSessionService(url)


def dump(session) -> None:
    print(json.dumps(session.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True), flush=True)


async def write(svc, session_id: str, events_file: str) -> None:
    state = {"greeting": "hi", "app:theme": "dark", "user:lang": "en", "temp:scratch": 1}
    session = await svc.create_session(app_name=APP, user_id=USER, session_id=session_id, state=state)
    with open(events_file, encoding="utf-8") as f:
        events = json.load(f)
    start = time.time()
    for i, raw in enumerate(events):
        event = Event.model_validate(raw)
        # Fresh, increasing times: the recorded ones come from different runs.
        event.timestamp = start + i / 1000
        await svc.append_event(session, event)
    dump(await svc.get_session(app_name=APP, user_id=USER, session_id=session_id))


async def read(svc, session_id: str) -> None:
    session = await svc.get_session(app_name=APP, user_id=USER, session_id=session_id)
    if session is None:
        raise SystemExit(f"adk-python finds no session {session_id}")
    dump(session)
    event = Event(
        invocation_id="e-python",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="appended by adk-python")]),
    )
    event.actions.state_delta = {"python": True, "user:python": True, "app:python": True}
    await svc.append_event(session, event)
    dump(await svc.get_session(app_name=APP, user_id=USER, session_id=session_id))


async def main(argv: list[str]) -> None:
    command, kind, target, session_id, *rest = argv
    svc = service(kind, target)
    try:
        if command == "write":
            await write(svc, session_id, rest[0])
        elif command == "read":
            await read(svc, session_id)
        else:
            raise SystemExit(f"unknown command {command}")
    finally:
        if hasattr(svc, "close"):
            await svc.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
