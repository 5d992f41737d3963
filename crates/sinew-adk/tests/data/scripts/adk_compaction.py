"""adk-python's side of the compaction differential test (`src/compaction.rs`, `tests` module).

Reads a JSON array of cases from stdin, each `{"events": [camelCase events]}`, and prints one JSON
array with, for each case, what google-adk 2.13.0's own compaction code decides on those events:

    prefix     the length of `_longest_self_contained_prefix` over the non-summary events
    history    `_process_compaction_events` then `_recover_compacted_function_calls`: event ids,
               a summary written as "S:" and its text
    sliding    for each (interval, overlap) of SLIDING: the ids the summarizer was given, or null
    token      for each (threshold, retention) of TOKEN: the ids the summarizer was given
               (the previous summary as "seed"), or null
    tokens     `_latest_prompt_token_count` (on the events left after rewinds, as the compactor
               calls it) for every agent ("") and for agent "a"
    contents   the history `_get_contents` builds for every agent ("") and for agent "a"

The summarizer records what it is given and writes nothing, so nothing is appended.
"""

import asyncio
import json
import logging
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)

from google.adk.agents import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.apps import compaction as c
from google.adk.events._rewind_events import _apply_rewinds
from google.adk.flows.llm_flows.context._contents import _get_contents
from google.adk.events.event import Event
from google.adk.flows.llm_flows.context._compaction import _process_compaction_events
from google.adk.flows.llm_flows.context._compaction import _recover_compacted_function_calls
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session

SLIDING = [(1, 0), (2, 1), (3, 2)]
TOKEN = [(1, 0), (1, 2), (40, 3)]


class Capture(BaseEventsSummarizer):
  def __init__(self):
    self.given = None

  async def maybe_summarize_events(self, *, events):
    self.given = events
    return None


def ids(events, original):
  return [e.id if e.id in original else "seed" for e in events]


async def decide(case):
  events = [Event.model_validate(e) for e in case["events"]]
  original = {e.id for e in events}
  session = Session(id="s", app_name="app", user_id="u", events=events)
  service = InMemorySessionService()
  agent = LlmAgent(name="a", model="gemini-2.5-flash")
  raw = [e for e in events if not e.actions.compaction]
  history = _recover_compacted_function_calls(_process_compaction_events(events), events)
  out = {
      "prefix": len(c._longest_self_contained_prefix(raw, all_events=events)),
      "history": [("S:" + e.content.parts[0].text) if e.actions.compaction else e.id for e in history],
      "sliding": [],
      "token": [],
      "tokens": [c._latest_prompt_token_count(_apply_rewinds(events), agent_name=name) for name in ("", "a")],
      "contents": [
          [content.model_dump(mode="json", exclude_none=True) for content in _get_contents(None, events, name)]
          for name in ("", "a")
      ],
  }
  for interval, overlap in SLIDING:
    capture = Capture()
    config = EventsCompactionConfig(compaction_interval=interval, overlap_size=overlap, summarizer=capture)
    app = App(name="app", root_agent=agent, events_compaction_config=config)
    async for _ in c._run_compaction_for_sliding_window(app, session, service):
      pass
    out["sliding"].append(None if capture.given is None else ids(capture.given, original))
  for threshold, retention in TOKEN:
    capture = Capture()
    config = EventsCompactionConfig(token_threshold=threshold, event_retention_size=retention, summarizer=capture)
    await c._run_compaction_for_token_threshold_config(
        config=config, session=session, session_service=service, agent=agent)
    out["token"].append(None if capture.given is None else ids(capture.given, original))
  return out


async def main():
  cases = json.load(sys.stdin)
  print(json.dumps([await decide(case) for case in cases]))


if __name__ == "__main__":
  asyncio.run(main())
