"""Captures real LlmRequests (and resulting events) from google-adk 2.13.0.

Run: /work/main/target/adk-venv/bin/python /tmp/notes/adk_requests/capture.py
Writes one JSON file per scenario into /tmp/notes/adk_requests/.
Each file: {"requests": [{"agent": ..., "request": <model_dump json>}...],
            "events": [<event model_dump json>...], "notes": ...}
"""
import asyncio
import json
import os
import sys
import traceback
import warnings

warnings.filterwarnings("ignore")
import logging
logging.disable(logging.CRITICAL)

from google.adk.agents import LlmAgent, SequentialAgent, ParallelAgent, LoopAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.exit_loop_tool import exit_loop
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

OUT = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- fake model
SCRIPT: dict = {}     # agent name -> list of responses (LlmResponse or list)
REQUESTS: list = []   # captured requests


def _fallback(v):
  # pydantic model classes (output_schema) are not JSON-serializable; show
  # them as {'__pydantic_model__': name, 'json_schema': ...}.
  if isinstance(v, type) and hasattr(v, 'model_json_schema'):
    return {'__pydantic_model__': v.__name__, 'json_schema': v.model_json_schema()}
  return repr(v)


class FakeLlm(BaseLlm):
  """Records every request; replies from SCRIPT keyed by adk_agent_name label."""

  async def generate_content_async(self, llm_request: LlmRequest, stream=False):
    agent = (llm_request.config.labels or {}).get('adk_agent_name')
    REQUESTS.append({
        'agent': agent,
        'stream': stream,
        'request': llm_request.model_dump(mode='json', exclude_none=True, fallback=_fallback),
    })
    queue = SCRIPT.get(agent) or []
    if not queue:
      resp = text('(script exhausted)')
    else:
      resp = queue.pop(0)
    if isinstance(resp, Exception):
      raise resp
    if isinstance(resp, list):  # streaming chunks
      for r in resp:
        yield r
    else:
      yield resp


def text(t, partial=None):
  return LlmResponse(
      content=types.Content(role='model', parts=[types.Part(text=t)]),
      partial=partial,
  )


def fc(name, args=None, id=None, extra_text=None):
  parts = []
  if extra_text:
    parts.append(types.Part(text=extra_text))
  parts.append(types.Part(function_call=types.FunctionCall(name=name, args=args or {}, id=id)))
  return LlmResponse(content=types.Content(role='model', parts=parts))


def fcs(*calls):
  return LlmResponse(content=types.Content(role='model', parts=[
      types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in calls]))


MODEL = FakeLlm(model='fake-model')


def user(t):
  return types.Content(role='user', parts=[types.Part(text=t)])


def dump_event(e):
  return e.model_dump(mode='json', exclude_none=True)


async def run_turn(runner, session_id, msg, events, run_config=None, **kw):
  async for ev in runner.run_async(user_id='u', session_id=session_id,
                                   new_message=msg, run_config=run_config, **kw):
    events.append(dump_event(ev))


def save(name, events, notes='', extra=None):
  data = {'notes': notes, 'requests': list(REQUESTS), 'events': events}
  if extra:
    data.update(extra)
  with open(os.path.join(OUT, f'{name}.json'), 'w') as f:
    json.dump(data, f, indent=1, ensure_ascii=False)
  print(f'== {name}: {len(REQUESTS)} requests, {len(events)} events')


def reset(script):
  SCRIPT.clear()
  SCRIPT.update(script)
  REQUESTS.clear()


async def new_runner(agent, state=None, app_name='app'):
  runner = InMemoryRunner(agent=agent, app_name=app_name)
  s = await runner.session_service.create_session(app_name=app_name, user_id='u', state=state)
  return runner, s


# ---------------------------------------------------------------- tools
def get_weather(city: str) -> dict:
  """Gets the weather for a city.

  Args:
    city: the city name.
  """
  return {'weather': f'sunny in {city}'}


def boom(x: int) -> dict:
  """A tool that raises."""
  raise RuntimeError('kaboom')


def delete_file(path: str) -> dict:
  """Deletes a file."""
  return {'deleted': path}


# ---------------------------------------------------------------- scenarios
async def s_single_tool_round():
  reset({'demo_agent': [fc('get_weather', {'city': 'Paris'}), text('It is sunny.')]})
  agent = LlmAgent(name='demo_agent', model=MODEL, description='A demo agent.',
                   instruction='You answer weather questions. User is {user_name}.',
                   tools=[get_weather], output_key='last_answer')
  runner, s = await new_runner(agent, state={'user_name': 'Bob'})
  events = []
  await run_turn(runner, s.id, user('Weather in Paris?'), events)
  # second turn: shows history incl. adk- id removal
  SCRIPT['demo_agent'] = [text('You are welcome.')]
  await run_turn(runner, s.id, user('Thanks'), events)
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save('single_tool_round', events, 'single LlmAgent with a tool; 2 turns',
       {'final_state': sess.state})


async def s_transfer():
  reset({
      'root': [fc('transfer_to_agent', {'agent_name': 'sub_a'})],
      'sub_a': [text('sub_a here, answering.'), text('sub_a again (2nd turn).'),
                fc('transfer_to_agent', {'agent_name': 'root'})],
  })
  sub_a = LlmAgent(name='sub_a', model=MODEL, description='Handles A things.',
                   instruction='You are A.')
  sub_b = LlmAgent(name='sub_b', model=MODEL, description='Handles B things.',
                   instruction='You are B.', disallow_transfer_to_parent=True,
                   disallow_transfer_to_peers=True)
  root = LlmAgent(name='root', model=MODEL, description='The root.',
                  instruction='Route requests.', global_instruction='GLOBAL: be polite.',
                  sub_agents=[sub_a, sub_b])
  runner, s = await new_runner(root)
  events = []
  await run_turn(runner, s.id, user('Do an A thing'), events)
  await run_turn(runner, s.id, user('Another A thing'), events)
  SCRIPT['root'] = [text('root back in control')]
  await run_turn(runner, s.id, user('Now go back to root'), events)
  save('transfer', events,
       'root(sub_a, sub_b[disallow parent+peers]); turn1 root->sub_a; turn2 goes straight '
       'to sub_a (last author); turn3 sub_a transfers back to root')


async def s_sequential():
  reset({'writer': [text('DRAFT: hello world')], 'reviewer': [text('REVIEW: looks good')]})
  writer = LlmAgent(name='writer', model=MODEL, instruction='Write a draft.',
                    output_key='draft')
  reviewer = LlmAgent(name='reviewer', model=MODEL,
                      instruction='Review this draft: {draft}')
  seq = SequentialAgent(name='pipeline', sub_agents=[writer, reviewer])
  runner, s = await new_runner(seq)
  events = []
  await run_turn(runner, s.id, user('Write about hello'), events)
  save('sequential', events, 'SequentialAgent(writer[output_key=draft], reviewer)')


async def s_parallel():
  reset({'p1': [text('p1 result')], 'p2': [text('p2 result')],
         'merger': [text('merged')]})
  p1 = LlmAgent(name='p1', model=MODEL, instruction='Do part 1.', output_key='r1')
  p2 = LlmAgent(name='p2', model=MODEL, instruction='Do part 2.', output_key='r2')
  par = ParallelAgent(name='fanout', sub_agents=[p1, p2])
  merger = LlmAgent(name='merger', model=MODEL, instruction='Merge {r1} and {r2}.')
  seq = SequentialAgent(name='pipeline', sub_agents=[par, merger])
  runner, s = await new_runner(seq)
  events = []
  await run_turn(runner, s.id, user('Go'), events)
  save('parallel', events, 'Sequential(ParallelAgent(p1,p2), merger)')


async def s_loop():
  reset({'worker': [text('iteration 1'), fc('exit_loop', {})],
         'after': [text('after loop')]})
  worker = LlmAgent(name='worker', model=MODEL, instruction='Work; call exit_loop when done.',
                    tools=[exit_loop])
  loop = LoopAgent(name='looper', sub_agents=[worker], max_iterations=5)
  after = LlmAgent(name='after', model=MODEL, instruction='Summarize.')
  seq = SequentialAgent(name='pipeline', sub_agents=[loop, after])
  runner, s = await new_runner(seq)
  events = []
  await run_turn(runner, s.id, user('Loop please'), events)
  save('loop', events, 'Sequential(LoopAgent(worker[exit_loop], max_iterations=5), after)')


async def s_confirmation():
  reset({'confirm_agent': [
      fc('delete_file', {'path': '/tmp/a'}),
      text('ok, not deleted'),
      fc('delete_file', {'path': '/tmp/b'}),
      text('deleted b'),
  ]})
  agent = LlmAgent(name='confirm_agent', model=MODEL, instruction='Manage files.',
                   tools=[FunctionTool(delete_file, require_confirmation=True)])
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('delete /tmp/a'), events)
  conf_fc = next(p['function_call'] for e in events for p in e.get('content', {}).get('parts', [])
                 if p.get('function_call', {}).get('name') == 'adk_request_confirmation')
  # reject
  msg = types.Content(role='user', parts=[types.Part(function_response=types.FunctionResponse(
      id=conf_fc['id'], name='adk_request_confirmation', response={'confirmed': False}))])
  await run_turn(runner, s.id, msg, events)
  # second call, approve
  await run_turn(runner, s.id, user('delete /tmp/b'), events)
  conf_fc2 = [p['function_call'] for e in events for p in e.get('content', {}).get('parts', [])
              if p.get('function_call', {}).get('name') == 'adk_request_confirmation'][-1]
  msg = types.Content(role='user', parts=[types.Part(function_response=types.FunctionResponse(
      id=conf_fc2['id'], name='adk_request_confirmation', response={'confirmed': True}))])
  await run_turn(runner, s.id, msg, events)
  save('confirmation', events,
       'tool with require_confirmation=True: request -> reject (confirmed False); '
       'then request -> approve (confirmed True)')


async def s_streaming():
  chunks = [text('Hel', partial=True), text('lo', partial=True),
            text('Hello')]
  reset({'streamer': [chunks]})
  agent = LlmAgent(name='streamer', model=MODEL, instruction='Stream.', output_key='out')
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('hi'), events,
                 run_config=RunConfig(streaming_mode=StreamingMode.SSE))
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save('streaming', events, 'SSE streaming: two partial chunks + final',
       {'session_events': [dump_event(e) for e in sess.events], 'final_state': sess.state})


async def s_callbacks():
  from google.adk.agents.callback_context import CallbackContext
  calls = []

  def before_agent(callback_context: CallbackContext):
    calls.append('before_agent')
    if callback_context.state.get('skip'):
      return types.Content(role='model', parts=[types.Part(text='skipped by before_agent')])
    return None

  def after_agent(callback_context):
    calls.append('after_agent')
    return types.Content(parts=[types.Part(text='appended by after_agent')])

  def before_model(callback_context, llm_request):
    calls.append('before_model')
    return None

  def after_model(callback_context, llm_response):
    calls.append('after_model')
    return None

  def before_tool(tool, args, tool_context):
    calls.append(f'before_tool:{tool.name}')
    return None

  def after_tool(tool, args, tool_context, tool_response):
    calls.append(f'after_tool:{tool.name}:{tool_response}')
    return None

  def on_tool_error(tool, args, tool_context, error):
    calls.append(f'on_tool_error:{tool.name}:{error!r}')
    return {'recovered': str(error)}

  reset({'cb_agent': [fcs(('get_weather', {'city': 'Rome'}), ('boom', {'x': 1}),
                          ('nonexistent_tool', {}), ('get_weather', {})),
                      text('done')]})
  agent = LlmAgent(name='cb_agent', model=MODEL, instruction='cb',
                   tools=[get_weather, boom],
                   before_agent_callback=before_agent, after_agent_callback=after_agent,
                   before_model_callback=before_model, after_model_callback=after_model,
                   before_tool_callback=before_tool, after_tool_callback=after_tool,
                   on_tool_error_callback=on_tool_error)
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('go'), events)
  # short-circuit via before_agent
  REQUESTS_before = len(REQUESTS)
  runner2, s2 = await new_runner(agent, state={'skip': True})
  ev2 = []
  await run_turn(runner2, s2.id, user('go'), ev2)
  save('callbacks', events,
       'parallel FCs: ok tool, raising tool (recovered by on_tool_error), unknown tool, '
       'missing mandatory arg; callbacks order; then before_agent short-circuit',
       {'callback_calls': calls, 'short_circuit_events': ev2})


async def s_templating():
  results = {}
  from google.adk.agents.readonly_context import ReadonlyContext
  from google.adk.utils.instructions_utils import inject_session_state
  reset({'tmpl': [text('ok')] * 20})
  tmpls = {
      'basic': 'Hi {name}, app={app:color} user={user:lang} opt=[{missing?}] none=[{nonekey}]',
      'double_braces': 'double {{name}} and {{{name}}}',
      'non_identifier': 'json {"a": 1} and {not valid} and {a.b} and {x:y} and { name }',
      'escaped': r'dollar ${name} backslash \{name}',
      'artifact_optional': 'art=[{artifact.missing.txt?}]',
      'temp_key_from_session_create': 'temp={temp:t}',
      'missing': 'Hello {missing_key}',
      'missing_artifact': 'art {artifact.nope.txt}',
  }
  for k, t in tmpls.items():
    agent = LlmAgent(name='tmpl', model=MODEL, instruction=t)
    runner, s = await new_runner(agent, state={'name': 'Ann', 'app:color': 'red',
                                               'user:lang': 'fr', 'temp:t': 'T', 'nonekey': None})
    ev = []
    try:
      await run_turn(runner, s.id, user('hi'), ev)
      results[k] = {'template': t, 'system_instruction': REQUESTS[-1]['request']['config'].get('system_instruction')}
    except Exception as e:
      results[k] = {'template': t, 'error': f'{type(e).__name__}: {e}'}
  # InstructionProvider bypass
  agent = LlmAgent(name='tmpl', model=MODEL, instruction=lambda ctx: 'provider {name} raw')
  runner, s = await new_runner(agent, state={'name': 'Ann'})
  await run_turn(runner, s.id, user('hi'), [])
  results['instruction_provider'] = {'system_instruction': REQUESTS[-1]['request']['config'].get('system_instruction')}
  # static_instruction + instruction
  agent = LlmAgent(name='tmpl', model=MODEL, static_instruction='STATIC PART',
                   instruction='dynamic for {name}')
  runner, s = await new_runner(agent, state={'name': 'Ann'})
  await run_turn(runner, s.id, user('hi'), [])
  results['static_plus_dynamic'] = {'request': REQUESTS[-1]['request']}
  save('templating', [], 'instruction templating outcomes', {'results': results})


async def s_include_contents_none():
  reset({'a1': [text('a1 says X')], 'a2': [text('a2 reply')]})
  a1 = LlmAgent(name='a1', model=MODEL, instruction='first')
  a2 = LlmAgent(name='a2', model=MODEL, instruction='second', include_contents='none')
  seq = SequentialAgent(name='pipeline', sub_agents=[a1, a2])
  runner, s = await new_runner(seq)
  events = []
  await run_turn(runner, s.id, user('turn 1'), events)
  SCRIPT.update({'a1': [text('a1 says Y')], 'a2': [text('a2 reply 2')]})
  await run_turn(runner, s.id, user('turn 2'), events)
  save('include_contents_none', events, "Sequential(a1, a2[include_contents='none']), 2 turns")


async def s_max_llm_calls():
  reset({'looping': [fc('get_weather', {'city': 'X'})] * 10})
  agent = LlmAgent(name='looping', model=MODEL, instruction='loop', tools=[get_weather])
  runner, s = await new_runner(agent)
  events = []
  err = None
  try:
    await run_turn(runner, s.id, user('go'), events, run_config=RunConfig(max_llm_calls=2))
  except Exception as e:
    err = f'{type(e).__name__}: {e}'
  save('max_llm_calls', events, 'max_llm_calls=2 with model that always calls a tool',
       {'error': err})


async def s_long_running():
  def ask_approval(amount: int) -> dict:
    """Asks a manager for approval."""
    return {'status': 'pending'}

  reset({'lr': [fc('ask_approval', {'amount': 5}), text('waiting for approval'),
                text('approved, done')]})
  agent = LlmAgent(name='lr', model=MODEL, instruction='lr',
                   tools=[LongRunningFunctionTool(ask_approval)])
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('approve 5'), events)
  fcall = next(p['function_call'] for e in events for p in e.get('content', {}).get('parts', [])
               if p.get('function_call', {}).get('name') == 'ask_approval')
  msg = types.Content(role='user', parts=[types.Part(function_response=types.FunctionResponse(
      id=fcall['id'], name='ask_approval', response={'status': 'approved'}))])
  await run_turn(runner, s.id, msg, events)
  save('long_running', events, 'LongRunningFunctionTool; then client posts final FR')


async def s_empty_contents():
  reset({'nocontents': [text('ok')]})
  agent = LlmAgent(name='nocontents', model=MODEL, instruction='Just talk.', include_contents='none')
  runner, s = await new_runner(agent)
  # state_delta only message? Need a message; send message with empty text part
  events = []
  try:
    await run_turn(runner, s.id, types.Content(role='user', parts=[types.Part(text='')]), events)
  except Exception as e:
    events.append({'error': repr(e)})
  save('empty_contents', events, 'user message with empty text part')


async def s_transfer_tools_schema():
  from pydantic import BaseModel

  class Answer(BaseModel):
    answer: str
    confidence: float = 0.5

  reset({'root2': [fc('get_weather', {'city': 'Oslo'}, id='call_model_1'),
                   fc('set_model_response', {'answer': 'cold', 'confidence': 0.9})]})
  sub = LlmAgent(name='helper', model=MODEL, description='Helps.')
  root = LlmAgent(name='root2', model=MODEL, instruction='Answer in schema.',
                  tools=[get_weather], output_schema=Answer, output_key='ans',
                  generate_content_config=types.GenerateContentConfig(temperature=0.2, max_output_tokens=100),
                  sub_agents=[sub])
  runner, s = await new_runner(root)
  events = []
  await run_turn(runner, s.id, user('weather?'), events,
                 run_config=RunConfig(labels={'team': 'x'}, custom_metadata={'trace': 't1'}))
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save('transfer_tools_schema', events,
       'root with tools + output_schema (non-gemini model -> set_model_response workaround) '
       '+ sub_agent + generate_content_config + RunConfig.labels/custom_metadata; model-supplied FC id',
       {'final_state': sess.state})


async def s_output_schema_no_tools():
  from pydantic import BaseModel

  class Answer(BaseModel):
    answer: str

  reset({'schema_agent': [text('{"answer": "42"}')]})
  agent = LlmAgent(name='schema_agent', model=MODEL, instruction='Answer.',
                   output_schema=Answer, output_key='ans')
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('q'), events)
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save('output_schema_no_tools', events, 'output_schema without tools -> response_schema + json mime',
       {'final_state': sess.state})


async def s_tool_errors_no_callback():
  reset({'err_agent': [fcs(('nonexistent_tool', {'a': 1})), text('recovered'),
                       fcs(('boom', {'x': 1}))]})
  agent = LlmAgent(name='err_agent', model=MODEL, instruction='e', tools=[boom])
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('call unknown'), events)
  err = None
  try:
    await run_turn(runner, s.id, user('call boom'), events)
  except Exception as e:
    err = f'{type(e).__name__}: {e}'
  save('tool_errors_no_callback', events,
       'unknown tool without on_tool_error (error FR to model); raising tool without callback',
       {'raised': err})


async def s_thoughts_and_model_callbacks():
  def before_model(callback_context, llm_request):
    if callback_context.state.get('short'):
      return LlmResponse(content=types.Content(role='model', parts=[types.Part(text='from before_model')]))
    return None

  reset({'thinker': [LlmResponse(content=types.Content(role='model', parts=[
      types.Part(text='let me think', thought=True), types.Part(text='answer A')])),
                     text('answer B')]})
  agent = LlmAgent(name='thinker', model=MODEL, instruction='t', before_model_callback=before_model)
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('q1'), events, yield_user_message=True)
  await run_turn(runner, s.id, user('q2'), events, yield_user_message=True)
  runner2, s2 = await new_runner(agent, state={'short': True})
  ev2 = []
  await run_turn(runner2, s2.id, user('q'), ev2)
  save('thoughts_and_model_callbacks', events,
       'thought part in history; yield_user_message=True; before_model_callback short-circuit',
       {'before_model_short_circuit_events': ev2})


async def s_resumable_long_running():
  from google.adk.apps.app import App, ResumabilityConfig

  def ask_approval(amount: int) -> None:
    """Asks a manager for approval."""
    return None

  reset({'lr2': [fc('ask_approval', {'amount': 7}), text('approved, done')]})
  agent = LlmAgent(name='lr2', model=MODEL, instruction='lr',
                   tools=[LongRunningFunctionTool(ask_approval)])
  app = App(name='app', root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True))
  runner = InMemoryRunner(app=app)
  s = await runner.session_service.create_session(app_name='app', user_id='u')
  events = []
  await run_turn(runner, s.id, user('approve 7'), events)
  fcall = next(p['function_call'] for e in events for p in (e.get('content') or {}).get('parts', [])
               if p.get('function_call', {}).get('name') == 'ask_approval')
  msg = types.Content(role='user', parts=[types.Part(function_response=types.FunctionResponse(
      id=fcall['id'], name='ask_approval', response={'status': 'approved'}))])
  await run_turn(runner, s.id, msg, events)
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save('resumable_long_running', events, 'resumable app; long-running tool returning None pauses',
       {'session_events': [dump_event(e) for e in sess.events]})


async def s_disallow_parent_routing():
  reset({'boss': [fc('transfer_to_agent', {'agent_name': 'leaf'}), text('boss answers turn 2')],
         'leaf': [text('leaf answer')]})
  leaf = LlmAgent(name='leaf', model=MODEL, description='Leaf.', disallow_transfer_to_parent=True)
  boss = LlmAgent(name='boss', model=MODEL, description='Boss.', sub_agents=[leaf])
  runner, s = await new_runner(boss)
  events = []
  await run_turn(runner, s.id, user('to leaf'), events)
  await run_turn(runner, s.id, user('next turn'), events)
  save('disallow_parent_routing', events,
       'leaf has disallow_transfer_to_parent=True: SI has no parent sentence; next turn routes to root')


async def s_streaming_fc():
  chunks = [text('Checking', partial=True),
            LlmResponse(content=types.Content(role='model', parts=[
                types.Part(text='Checking'),
                types.Part(function_call=types.FunctionCall(name='get_weather', args={'city': 'Rome'}))]))]
  reset({'sfc': [chunks, [text('Sun', partial=True), text('Sunny')]]})
  agent = LlmAgent(name='sfc', model=MODEL, instruction='s', tools=[get_weather], output_key='o')
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('hi'), events, run_config=RunConfig(streaming_mode=StreamingMode.SSE))
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save('streaming_fc', events, 'SSE with text+function call turn, then text',
       {'final_state': sess.state})


async def s_rewind():
  reset({'rw': [text('first'), text('second'), text('third')]})
  agent = LlmAgent(name='rw', model=MODEL, instruction='r', output_key='o')
  runner, s = await new_runner(agent)
  events = []
  await run_turn(runner, s.id, user('one'), events)
  await run_turn(runner, s.id, user('two'), events)
  inv2 = events[-1]['invocation_id']
  await runner.rewind_async(user_id='u', session_id=s.id, rewind_before_invocation_id=inv2)
  await run_turn(runner, s.id, user('three'), events)
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save('rewind', events, 'rewind_async before invocation 2, then a new turn',
       {'session_events': [dump_event(e) for e in sess.events], 'final_state': sess.state})

async def s_history_rearrange():
  """Hand-built session history to show contents.py filtering/rearranging."""
  from google.adk.events.event import Event
  from google.adk.events.event_actions import EventActions, EventCompaction

  reset({'hist': [text('final answer')]})
  agent = LlmAgent(name='hist', model=MODEL, instruction='h')
  runner, s = await new_runner(agent)
  svc = runner.session_service
  sess = await svc.get_session(app_name='app', user_id='u', session_id=s.id)
  t = [1000.0]

  def ev(author, parts, role, inv='inv-old', **kw):
    t[0] += 1
    return Event(author=author, invocation_id=inv, timestamp=t[0],
                 content=types.Content(role=role, parts=parts) if parts is not None else None, **kw)

  P = types.Part
  FCp = lambda n, i, a=None: P(function_call=types.FunctionCall(name=n, id=i, args=a or {}))
  FRp = lambda n, i, r: P(function_response=types.FunctionResponse(name=n, id=i, response=r))
  hist = [
      # 1) compacted away: user msg + reply, then compaction event covering them
      ev('user', [P(text='old question (compacted)')], 'user'),
      ev('hist', [P(text='old answer (compacted)')], 'model'),
  ]
  for e in hist:
    await svc.append_event(sess, e)
  comp = Event(author='user', invocation_id='inv-comp', timestamp=hist[1].timestamp + 0.5,
               actions=EventActions(compaction=EventCompaction(
                   start_timestamp=hist[0].timestamp, end_timestamp=hist[1].timestamp,
                   compacted_content=types.Content(role='model', parts=[P(text='SUMMARY of old turns')]))))
  await svc.append_event(sess, comp)
  t[0] = comp.timestamp + 1
  rest = [
      ev('user', [P(text='parallel please')], 'user'),
      # 2) parallel FC with two calls; responses arrive in separate events
      ev('hist', [FCp('tool_a', 'adk-c1'), FCp('tool_b', 'adk-c2')], 'model'),
      ev('hist', [FRp('tool_a', 'adk-c1', {'r': 'a-done'})], 'user'),
      ev('hist', [P(text='interim text between responses')], 'model'),
      ev('hist', [FRp('tool_b', 'adk-c2', {'r': 'b-done'})], 'user'),
      # 3) orphan FR (no call) and orphan FC (no response) get dropped
      ev('hist', [FRp('ghost', 'adk-ghost', {'r': 1})], 'user'),
      ev('hist', [FCp('never_answered', 'adk-orphan')], 'model'),
      # 4) credential request plumbing is filtered
      ev('hist', [FCp('adk_request_credential', 'adk-cred', {'functionCallId': 'x'})], 'model'),
      # 5) state-only event (no content) skipped; thought-only event skipped
      ev('hist', None, None, actions=EventActions(state_delta={'k': 1})),
      ev('hist', [P(text='private thinking', thought=True)], 'model'),
      # 6) another agent's text + thought (thought dropped unless include_thoughts_from_other_agents)
      ev('other_agent', [P(text='hmm', thought=True), P(text='I am another agent')], 'model'),
      # 7) event on another branch (not visible when current branch is None? -> visible)
      ev('hist', [P(text='on branch x.y')], 'model', branch='x.y'),
  ]
  for e in rest:
    await svc.append_event(sess, e)
  events = []
  await run_turn(runner, s.id, user('new question'), events)
  # Same history with include_thoughts_from_other_agents
  SCRIPT['hist'] = [text('again')]
  await run_turn(runner, s.id, user('again'), events,
                 run_config=RunConfig(include_thoughts_from_other_agents=True))
  save('history_rearrange', events,
       'hand-built history: compaction, parallel FRs split across events (+ interim text), '
       'orphans, adk_request_credential, state-only/thought-only events, other agent with thought, '
       'branched event; 2nd request uses include_thoughts_from_other_agents=True',
       {'session_events': [dump_event(e) for e in (await svc.get_session(app_name='app', user_id='u', session_id=s.id)).events]})

async def s_templating_artifact_temp():
  def before_agent(callback_context):
    callback_context.state['temp:t'] = 'TEMPVAL'
    return None

  reset({'tmpl2': [text('ok')]})
  agent = LlmAgent(name='tmpl2', model=MODEL, before_agent_callback=before_agent,
                   instruction='art=[{artifact.notes.txt}] temp=[{temp:t}]')
  runner, s = await new_runner(agent)
  await runner.artifact_service.save_artifact(app_name='app', user_id='u', session_id=s.id,
                                              filename='notes.txt',
                                              artifact=types.Part(text='ARTIFACT TEXT'))
  events = []
  await run_turn(runner, s.id, user('hi'), events)
  save('templating_artifact_temp', events,
       '{artifact.notes.txt} with a text artifact; {temp:t} set by before_agent_callback in the same invocation')


def usage(response, prompt_tokens):
  response.usage_metadata = types.GenerateContentResponseUsageMetadata(
      prompt_token_count=prompt_tokens, candidates_token_count=5,
      total_token_count=prompt_tokens + 5)
  return response


async def run_app(app, turns, events):
  runner = InMemoryRunner(app=app)
  s = await runner.session_service.create_session(app_name='app', user_id='u')
  for message in turns:
    await run_turn(runner, s.id, user(message), events)
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  return [dump_event(e) for e in sess.events]


async def s_compaction_sliding_window():
  from google.adk.apps.app import App, EventsCompactionConfig

  # The summarizer's requests carry no agent label: their answers are under None.
  reset({
      'chat': [fc('get_weather', {'city': 'Paris'}), text('Sunny in Paris.'), text('London too.'),
               text('You are welcome.'), text('Bye!'), text('Still here.')],
      None: [text('SUMMARY ONE'), text('SUMMARY TWO')],
  })
  agent = LlmAgent(name='chat', model=MODEL, instruction='Chat.', tools=[get_weather])
  app = App(name='app', root_agent=agent, events_compaction_config=EventsCompactionConfig(
      compaction_interval=2, overlap_size=1))
  events = []
  session_events = await run_app(
      app, ['Weather in Paris?', 'And London?', 'Thanks', 'Bye', 'One more'], events)
  save('compaction_sliding_window', events,
       'compaction_interval=2, overlap_size=1, the root model summarizes: after turn 2 (turns 1-2) '
       'and after turn 4 (turns 2-4, overlapping); turns 3 and 5 see the summaries',
       {'session_events': session_events})


async def s_compaction_token_threshold():
  from google.adk.apps.app import App, EventsCompactionConfig

  reset({
      'chat': [usage(text('Hello.'), 10), usage(text('More.'), 60), usage(text('Even more.'), 70),
               usage(fc('get_weather', {'city': 'Oslo'}), 80), usage(text('Cold in Oslo.'), 20)],
      None: [text('SUMMARY A'), text('SUMMARY B'), text('SUMMARY C')],
  })
  agent = LlmAgent(name='chat', model=MODEL, instruction='Chat.', tools=[get_weather])
  app = App(name='app', root_agent=agent, events_compaction_config=EventsCompactionConfig(
      token_threshold=50, event_retention_size=2))
  events = []
  session_events = await run_app(app, ['hi', 'tell me more', 'and more', 'weather in Oslo?'], events)
  save('compaction_token_threshold', events,
       'token_threshold=50, event_retention_size=2: after turn 2 (60 tokens) the first turn is '
       'summarized; after turn 3 the rolling summary is extended; in turn 4 the call at 80 tokens '
       'compacts before the second model call',
       {'session_events': session_events})


def approval_answer(events, approved=True, answered=()):
  """The client's answer to the latest `ask_approval` call among `events` not in `answered`
  (the latest call when all are)."""
  calls = [p['function_call'] for e in events for p in (e.get('content') or {}).get('parts', [])
           if p.get('function_call', {}).get('name') == 'ask_approval']
  open_calls = [c for c in calls if c['id'] not in answered]
  call = (open_calls or calls)[-1]
  return types.Content(role='user', parts=[types.Part(function_response=types.FunctionResponse(
      id=call['id'], name='ask_approval', response={'status': 'approved' if approved else 'rejected'}))])


def ask_approval(amount: int) -> None:
  """Asks a manager for approval."""
  return None


async def run_resumable(name, root, notes, turns=1):
  """Runs `root` in a resumable app: a message that pauses on `ask_approval`, then the client's
  answer (`turns` times)."""
  from google.adk.apps.app import App, ResumabilityConfig
  app = App(name='app', root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True))
  runner = InMemoryRunner(app=app)
  s = await runner.session_service.create_session(app_name='app', user_id='u')
  events = []
  await run_turn(runner, s.id, user('approve 7'), events)
  answered = set()
  for _ in range(turns):
    answer = approval_answer(events, answered=answered)
    answered.add(answer.parts[0].function_response.id)
    await run_turn(runner, s.id, answer, events)
  sess = await runner.session_service.get_session(app_name='app', user_id='u', session_id=s.id)
  save(name, events, notes, {'session_events': [dump_event(e) for e in sess.events]})


async def s_resumable_sequential():
  reset({'step1': [fc('ask_approval', {'amount': 7}), text('approved, step1 done')],
         'step2': [text('step2 done')]})
  step1 = LlmAgent(name='step1', model=MODEL, instruction='one', tools=[LongRunningFunctionTool(ask_approval)])
  step2 = LlmAgent(name='step2', model=MODEL, instruction='two')
  await run_resumable('resumable_sequential', SequentialAgent(name='pipeline', sub_agents=[step1, step2]),
                      'resumable app; SequentialAgent(step1[long-running], step2): the answer resumes '
                      'step1, then step2 runs')


async def s_resumable_loop():
  reset({'first': [text('first 1'), text('first 2')],
         'second': [fc('ask_approval', {'amount': 7}), text('second 1 done'), text('second 2')]})
  first = LlmAgent(name='first', model=MODEL, instruction='one')
  second = LlmAgent(name='second', model=MODEL, instruction='two',
                    tools=[LongRunningFunctionTool(ask_approval)])
  await run_resumable('resumable_loop', LoopAgent(name='loop', sub_agents=[first, second], max_iterations=2),
                      'resumable app; LoopAgent(first, second[long-running], max 2): paused in round 1 '
                      'at second; the answer finishes round 1 and runs round 2')


async def s_resumable_parallel():
  reset({'left': [fc('ask_approval', {'amount': 7}), text('left done')],
         'right': [text('right done')]})
  left = LlmAgent(name='left', model=MODEL, instruction='l', tools=[LongRunningFunctionTool(ask_approval)])
  # `right` declares a long-running tool too, so that both branches reach the model in order.
  right = LlmAgent(name='right', model=MODEL, instruction='r', tools=[LongRunningFunctionTool(ask_approval)])
  seq = SequentialAgent(name='pipeline', sub_agents=[
      ParallelAgent(name='both', sub_agents=[left, right]),
      LlmAgent(name='after', model=MODEL, instruction='a')])
  SCRIPT['after'] = [text('after done')]
  await run_resumable('resumable_parallel', seq,
                      'resumable app; Sequential(Parallel(left[long-running], right), after): right '
                      'finishes, left pauses; the answer resumes left only, then after runs')


async def s_resumable_transfer():
  reset({'root': [fc('transfer_to_agent', {'agent_name': 'helper'})],
         'helper': [fc('ask_approval', {'amount': 7}), text('helper done')]})
  helper = LlmAgent(name='helper', model=MODEL, instruction='h', description='Helps.',
                    tools=[LongRunningFunctionTool(ask_approval)])
  root = LlmAgent(name='root', model=MODEL, instruction='route', sub_agents=[helper])
  await run_resumable('resumable_transfer', root,
                      'resumable app; root transfers to helper, which pauses; the answer resumes '
                      'helper through root')


async def s_resumable_answered_twice():
  reset({'step1': [fc('ask_approval', {'amount': 7}), text('approved, step1 done'), text('never')],
         'step2': [text('step2 done'), text('never')]})
  step1 = LlmAgent(name='step1', model=MODEL, instruction='one', tools=[LongRunningFunctionTool(ask_approval)])
  step2 = LlmAgent(name='step2', model=MODEL, instruction='two')
  await run_resumable('resumable_answered_twice', SequentialAgent(name='pipeline', sub_agents=[step1, step2]),
                      'resumable app; the same answer sent twice: the second finds the pipeline '
                      'finished, is stored, and nothing runs', turns=2)


async def s_resumable_parallel_sequence():
  reset({'left': [fc('ask_approval', {'amount': 7}), text('left done')],
         'r1': [text('r1 done'), text('never')], 'r2': [text('r2 done'), text('never')]})
  tools = lambda: [LongRunningFunctionTool(ask_approval)]
  left = LlmAgent(name='left', model=MODEL, instruction='l', tools=tools())
  right = SequentialAgent(name='rseq', sub_agents=[
      LlmAgent(name='r1', model=MODEL, instruction='r1', tools=tools()),
      LlmAgent(name='r2', model=MODEL, instruction='r2', tools=tools())])
  await run_resumable('resumable_parallel_sequence', ParallelAgent(name='both', sub_agents=[left, right]),
                      'resumable app; Parallel(left[long-running], Sequential(r1, r2)): left pausing '
                      'does not stop the sibling sequence; the answer resumes left only')


async def s_resumable_transfer_in_workflow():
  reset({'router': [fc('transfer_to_agent', {'agent_name': 'helper'}), text('never')],
         'helper': [fc('ask_approval', {'amount': 7}), text('helper done')],
         'after': [text('after done')]})
  helper = LlmAgent(name='helper', model=MODEL, instruction='h', description='Helps.',
                    tools=[LongRunningFunctionTool(ask_approval)])
  router = LlmAgent(name='router', model=MODEL, instruction='route', sub_agents=[helper])
  after = LlmAgent(name='after', model=MODEL, instruction='a')
  await run_resumable('resumable_transfer_in_workflow', SequentialAgent(name='pipeline', sub_agents=[router, after]),
                      'resumable app; Sequential(router -> helper[long-running], after): the answer '
                      'resumes helper through router, then after runs')


async def s_transfer_to_workflow():
  reset({'root': [fc('transfer_to_agent', {'agent_name': 'seq'})], 'a': [text('a done')],
         'b': [text('b done')]})
  seq = SequentialAgent(name='seq', description='Does a then b.', sub_agents=[
      LlmAgent(name='a', model=MODEL, instruction='a'), LlmAgent(name='b', model=MODEL, instruction='b')])
  root = LlmAgent(name='root', model=MODEL, instruction='route', sub_agents=[seq])
  runner, s = await new_runner(root)
  events = []
  await run_turn(runner, s.id, user('go'), events)
  save('transfer_to_workflow', events,
       'LLM root transfers to SequentialAgent(a, b): the workflow runs at root@1/seq@1 and its '
       'children write under the same path')


async def s_resumable_escalation_and_empty():
  reset({'w': [fc('exit_loop', {})], 'after': [text('after done')]})
  loop = LoopAgent(name='loop', sub_agents=[LlmAgent(name='w', model=MODEL, instruction='w', tools=[exit_loop])],
                   max_iterations=3)
  root = SequentialAgent(name='pipeline', sub_agents=[
      SequentialAgent(name='empty_seq'), ParallelAgent(name='empty_par'), loop,
      LlmAgent(name='after', model=MODEL, instruction='a')])
  from google.adk.apps.app import App, ResumabilityConfig
  app = App(name='app', root_agent=root, resumability_config=ResumabilityConfig(is_resumable=True))
  runner = InMemoryRunner(app=app)
  s = await runner.session_service.create_session(app_name='app', user_id='u')
  events = []
  await run_turn(runner, s.id, user('go'), events)
  save('resumable_escalation_and_empty', events,
       'resumable app; Sequential(empty Sequential, empty Parallel, Loop(w[exit_loop], max 3), after): '
       'empty workflows write nothing, the loop ends on escalation and says so')


async def s_resumable_two_calls():
  reset({'step1': [fcs(('ask_approval', {'amount': 1}), ('ask_approval', {'amount': 2})),
                   text('step1 after one'), text('step1 after both')],
         'step2': [text('step2 done'), text('step2 again')]})
  step1 = LlmAgent(name='step1', model=MODEL, instruction='one', tools=[LongRunningFunctionTool(ask_approval)])
  step2 = LlmAgent(name='step2', model=MODEL, instruction='two')
  await run_resumable('resumable_two_calls', SequentialAgent(name='pipeline', sub_agents=[step1, step2]),
                      'resumable app; step1 makes two long-running calls; the client answers them one '
                      'at a time', turns=2)


async def main():
  only = sys.argv[1:]
  for name, fn in list(globals().items()):
    if name.startswith('s_') and (not only or name[2:] in only):
      try:
        await fn()
      except Exception:
        print(f'!! {name} failed')
        traceback.print_exc()
        save(name[2:] + '_FAILED', [], traceback.format_exc())


if __name__ == '__main__':
  asyncio.run(main())
