// sinew's chat page: the chat API (agent definitions, conversations) and, when the server has
// it, ADK's api_server dialect (apps, sessions, tool confirmations). No framework, no build step.
"use strict";

const USER = "user";
const CONFIRMATION = "adk_request_confirmation";
const $ = (id) => document.getElementById(id);

// What is open: {kind: "chat", target, conversationId} or {kind: "adk", app, sessionId}.
let current = null;
let busy = false;

function token() {
  return sessionStorage.getItem("sinew-token");
}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  if (token()) headers["Authorization"] = "Bearer " + token();
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401 && !options.retried) {
    const given = prompt("This server wants its token:");
    if (given) {
      sessionStorage.setItem("sinew-token", given);
      return api(path, { ...options, retried: true });
    }
  }
  return response;
}

async function json(path, options) {
  const response = await api(path, options);
  if (!response.ok) throw new Error(await failure(response));
  return response.json();
}

async function failure(response) {
  try {
    const body = await response.json();
    return typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? body);
  } catch {
    return response.status + " " + response.statusText;
  }
}

function status(text) {
  $("status").textContent = text || "";
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function scroll() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
}

function addMessage(role, text) {
  const node = element("div", "message " + (role === "user" ? "user" : "assistant"), text);
  $("messages").append(node);
  scroll();
  return node;
}

// The element of a tool call, made when first seen.
function toolCall(callId, tool) {
  let node = document.querySelector(`.tool[data-call-id="${CSS.escape(callId)}"]`);
  if (!node) {
    node = element("div", "tool");
    node.dataset.callId = callId;
    node.append(element("strong", "name", tool), " ", element("span", "state"), element("span", "result"));
    $("messages").append(node);
    scroll();
  }
  return node;
}

function showTool(callId, tool, state, detail) {
  const node = toolCall(callId, tool);
  node.dataset.status = state;
  node.querySelector(".state").textContent = state;
  if (detail !== undefined) node.querySelector(".result").textContent = JSON.stringify(detail);
}

// SSE frames of a response, as parsed JSON values.
async function* frames(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) yield JSON.parse(data);
    }
  }
}

// --- targets and conversations ---------------------------------------------------------------

async function loadTargets() {
  const select = $("target");
  select.replaceChildren();
  try {
    for (const definition of await json("/api/agent-definitions")) {
      select.append(new Option(definition.name, "def:" + definition.id));
    }
  } catch (error) {
    status("Agent definitions: " + error.message);
  }
  select.append(new Option("Model (no agent)", "plain:"));
  try {
    const apps = await json("/list-apps");
    for (const app of apps) select.append(new Option("ADK app: " + app, "app:" + app));
  } catch {
    // A server without ADK's dialect.
  }
}

async function loadConversations() {
  const list = $("conversations");
  const items = [];
  try {
    for (const conversation of await json("/api/conversations")) {
      items.push({ label: conversation.title, key: "chat/" + conversation.id, open: () => openChat(conversation) });
    }
  } catch (error) {
    status("Conversations: " + error.message);
  }
  for (const option of $("target").options) {
    if (!option.value.startsWith("app:")) continue;
    const app = option.value.slice(4);
    try {
      for (const session of await json(`/apps/${encodeURIComponent(app)}/users/${USER}/sessions`)) {
        items.push({ label: app + " · " + session.id, key: `adk/${app}/${session.id}`, open: () => openSession(app, session.id) });
      }
    } catch {
      // The app's sessions are out of reach; its conversations are not listed.
    }
  }
  list.replaceChildren(
    ...items.map((item) => {
      const li = element("li", currentKey() === item.key ? "current" : "", item.label);
      li.dataset.key = item.key;
      li.title = item.label;
      li.addEventListener("click", () => {
        // A message being answered keeps its conversation open.
        if (!busy) item.open().catch((error) => status(error.message));
      });
      return li;
    }),
  );
}

function currentKey() {
  if (!current) return "";
  return current.kind === "chat" ? "chat/" + current.conversationId : `adk/${current.app}/${current.sessionId}`;
}

function remember() {
  history.replaceState(null, "", currentKey() ? "#" + currentKey() : location.pathname);
  for (const li of $("conversations").children) li.classList.toggle("current", li.dataset.key === currentKey());
}

function newConversation() {
  const value = $("target").value;
  current = value.startsWith("app:") ? { kind: "adk", app: value.slice(4), sessionId: null } : { kind: "chat", target: value, conversationId: null };
  $("messages").replaceChildren();
  $("title").textContent = "New conversation";
  remember();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function openChat(conversation) {
  if (!UUID.test(conversation.id)) throw new Error("not a conversation: " + conversation.id);
  const full = await json("/api/conversations/" + encodeURIComponent(conversation.id));
  current = { kind: "chat", target: full.agentDefinitionId ? "def:" + full.agentDefinitionId : "plain:", conversationId: full.id };
  $("title").textContent = full.title;
  $("messages").replaceChildren();
  for (const message of full.messages) addMessage(message.role, message.content);
  remember();
}

async function openSession(app, sessionId) {
  const session = await json(`/apps/${encodeURIComponent(app)}/users/${USER}/sessions/${encodeURIComponent(sessionId)}`);
  current = { kind: "adk", app, sessionId };
  $("title").textContent = app + " · " + sessionId;
  $("messages").replaceChildren();
  for (const event of session.events) showEvent(event, { text: null });
  remember();
}

// --- sending ---------------------------------------------------------------------------------

async function sendChat(text) {
  const body = { message: text };
  if (current.conversationId) body.conversationId = current.conversationId;
  else if (current.target.startsWith("def:")) body.agentDefinitionId = current.target.slice(4);
  const response = await api("/api/chat/stream", { method: "POST", body: JSON.stringify(body) });
  if (!response.ok) throw new Error(await failure(response));
  let answer = null;
  for await (const frame of frames(response)) {
    if (frame.type === "meta") {
      if (!current.conversationId) $("title").textContent = text.split("\n")[0];
      current.conversationId = frame.conversationId;
      remember();
    } else if (frame.type === "token") {
      answer = answer || addMessage("assistant", "");
      answer.textContent += frame.token;
      scroll();
    } else if (frame.type === "mcp_tool") {
      showTool(frame.callId || frame.tool, frame.tool, frame.status, frame.status === "error" ? frame.error : frame.result);
      answer = null;
    } else if (frame.type === "error") {
      status(frame.error);
    }
  }
}

// Shows one ADK event; `stream.text` is the bubble partial text is going into.
function showEvent(event, stream) {
  const parts = (event.content && event.content.parts) || [];
  const fromUser = event.author === USER;
  for (const part of parts) {
    if (part.text !== undefined && !part.thought) {
      if (fromUser) {
        addMessage("user", part.text);
      } else if (event.partial) {
        stream.text = stream.text || addMessage("assistant", "");
        stream.text.textContent += part.text;
        stream.streamed = true;
        scroll();
      } else if (stream.streamed) {
        // The complete event repeats what streamed.
        stream.text.textContent = part.text;
        stream.text = null;
        stream.streamed = false;
      } else {
        addMessage("assistant", part.text);
      }
    } else if (part.functionCall) {
      const call = part.functionCall;
      if (call.name === CONFIRMATION) showConfirmation(call);
      else showTool(call.id, call.name, "started", call.args);
    } else if (part.functionResponse) {
      const answer = part.functionResponse;
      if (answer.name === CONFIRMATION) {
        const node = document.querySelector(`.confirmation[data-call-id="${CSS.escape(answer.id)}"]`);
        if (node) settle(node, answer.response && answer.response.confirmed);
      } else {
        const failed = answer.response && answer.response.error !== undefined;
        showTool(answer.id, answer.name, failed ? "error" : "completed", failed ? answer.response.error : answer.response);
      }
    }
  }
}

function showConfirmation(call) {
  const original = (call.args && call.args.originalFunctionCall) || {};
  const hint = call.args && call.args.toolConfirmation && call.args.toolConfirmation.hint;
  const node = element("div", "confirmation");
  node.dataset.callId = call.id;
  node.append(element("span", "question", hint || `Run ${original.name}?`), element("br"));
  const approve = element("button", "approve", "Approve");
  const reject = element("button", "reject", "Reject");
  approve.type = reject.type = "button";
  approve.addEventListener("click", () => answerConfirmation(call.id, true, node));
  reject.addEventListener("click", () => answerConfirmation(call.id, false, node));
  node.append(approve, reject);
  $("messages").append(node);
  scroll();
}

function settle(node, confirmed) {
  node.dataset.answer = confirmed ? "approved" : "rejected";
  node.querySelectorAll("button").forEach((b) => b.remove());
  node.append(element("span", "answer", confirmed ? " Approved" : " Rejected"));
}

async function answerConfirmation(callId, confirmed, node) {
  settle(node, confirmed);
  const part = { functionResponse: { id: callId, name: CONFIRMATION, response: { confirmed } } };
  await guarded(() => runAdk({ role: "user", parts: [part] }));
}

async function runAdk(message) {
  if (!current.sessionId) {
    const session = await json(`/apps/${encodeURIComponent(current.app)}/users/${USER}/sessions`, { method: "POST", body: "{}" });
    current.sessionId = session.id;
    $("title").textContent = current.app + " · " + session.id;
    remember();
  }
  const body = { appName: current.app, userId: USER, sessionId: current.sessionId, newMessage: message, streaming: true };
  const response = await api("/run_sse", { method: "POST", body: JSON.stringify(body) });
  if (!response.ok) throw new Error(await failure(response));
  const stream = { text: null };
  for await (const frame of frames(response)) {
    if (frame.error) status(frame.error);
    else if (frame.author !== USER) showEvent(frame, stream);
  }
}

async function guarded(work) {
  if (busy) return;
  busy = true;
  for (const id of ["send", "target", "new"]) $(id).disabled = true;
  status("");
  try {
    await work();
  } catch (error) {
    status(error.message);
  } finally {
    busy = false;
    for (const id of ["send", "target", "new"]) $(id).disabled = false;
    await loadConversations();
  }
}

async function send(event) {
  event.preventDefault();
  const text = $("prompt").value.trim();
  if (!text || busy) return;
  $("prompt").value = "";
  if (!current) newConversation();
  addMessage("user", text);
  await guarded(() => (current.kind === "chat" ? sendChat(text) : runAdk({ role: "user", parts: [{ text }] })));
}

async function start() {
  $("composer").addEventListener("submit", send);
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("new").addEventListener("click", newConversation);
  $("target").addEventListener("change", newConversation);
  await loadTargets();
  await loadConversations();
  const [kind, ...rest] = location.hash.slice(1).split("/");
  try {
    if (kind === "chat" && rest[0]) await openChat({ id: rest[0] });
    else if (kind === "adk" && rest.length === 2) await openSession(rest[0], rest[1]);
    else newConversation();
  } catch (error) {
    status(error.message);
    newConversation();
  }
  document.body.dataset.ready = "true";
}

start();
