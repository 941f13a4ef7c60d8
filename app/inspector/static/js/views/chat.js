// Chat with the agent (POST /v1/chat): each turn's answer, every tool call with its arguments and
// result, and the memories the answer used.

import { enc } from "../api.js";
import { badge, busy, button, field, h, json, link } from "../dom.js";
import { needUser } from "./memories.js";

const SESSION = "engram.inspector.chat-session";
// Turns shown per (user, project, session) while the tab lives; the service keeps the redacted turns.
const logs = new Map();

function sessionId(fresh = false) {
  let id = sessionStorage.getItem(SESSION);
  if (!id || fresh) {
    id = `inspector-${crypto.randomUUID().slice(0, 8)}`;
    sessionStorage.setItem(SESSION, id);
  }
  return id;
}

export async function chatView(target, ctx) {
  target.append(h("h1", {}, "Chat"));
  if (needUser(target, ctx)) return;
  let session = sessionId();
  const key = () => `${ctx.userId}\u0000${ctx.projectId}\u0000${session}`;
  const log = h("ol", { class: "chat-log", "aria-label": "Conversation", "aria-live": "polite" });
  const message = h("textarea", { name: "message", rows: 3, required: true, maxlength: 8000,
    placeholder: "Tell the agent something to remember, or ask what it knows" });
  const send = h("button", { type: "submit" }, "Send");
  const form = h("form", { class: "chat-form", "aria-label": "Send a message" },
    field("Message", message, "Ctrl+Enter sends"), h("div", { class: "actions" }, send));
  const sessionNote = h("span", { class: "muted" });
  const showSession = () => { sessionNote.textContent = `session ${session}`; };
  const restart = button("New conversation", () => {
    session = sessionId(true);
    showSession();
    log.replaceChildren();
  });
  showSession();
  target.append(h("p", { class: "toolbar" }, sessionNote, " ", restart), log, form);
  for (const turn of logs.get(key()) || []) log.append(turn);

  const remember = (node) => {
    if (!logs.has(key())) logs.set(key(), []);
    logs.get(key()).push(node);
    log.append(node);
    node.scrollIntoView({ block: "nearest" });
  };
  message.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = message.value.trim();
    if (!text) return;
    busy(send, async () => {
      const body = { user_id: ctx.userId, message: text, session_id: session };
      if (ctx.projectId) body.project_id = ctx.projectId;
      try {
        const reply = await ctx.api.post("/v1/chat", body);
        remember(h("li", { class: "turn user" }, h("span", { class: "who" }, ctx.userId), h("p", {}, text)));
        remember(await agentTurn(reply, ctx));
        message.value = "";
        ctx.refreshPickers().catch(ctx.fail); // a first memory makes a new user appear in the list
      } catch (err) {
        ctx.fail(err);
      }
      message.focus();
    });
  });
}

async function agentTurn(reply, ctx) {
  const used = await Promise.all(reply.memories_used.map(async (id) => {
    try {
      return await ctx.api.get(`/v1/memories/${enc(id)}`);
    } catch {
      return { id, content: `memory ${String(id).slice(0, 8)}` };
    }
  }));
  return h("li", { class: "turn agent" },
    h("span", { class: "who" }, "agent ", badge(reply.mode), " ", h("span", { class: "muted" }, reply.model)),
    h("p", { class: "answer" }, reply.answer),
    reply.tool_calls.length
      ? h("div", { class: "tool-calls" }, h("h3", {}, `Tool calls (${reply.tool_calls.length})`),
        h("ol", {}, reply.tool_calls.map((call) => h("li", { class: "tool-call" },
          h("details", { open: true }, h("summary", {}, h("code", {}, call.name)),
            h("div", { class: "io" },
              h("div", {}, h("h4", {}, "arguments"), json(call.arguments)),
              h("div", {}, h("h4", {}, "result"), json(call.result))))))))
      : h("p", { class: "muted" }, "No tool calls."),
    h("div", { class: "used" }, h("h3", {}, `Memories used (${used.length})`),
      used.length
        ? h("ul", {}, used.map((m) => h("li", {}, link(m.content, `memories/${enc(m.id)}`))))
        : h("p", { class: "muted" }, "None.")),
    h("p", { class: "muted usage" }, `tokens: ${reply.usage.prompt_tokens ?? 0} prompt + ${reply.usage.completion_tokens ?? 0} completion = ${reply.usage.total_tokens ?? 0}`));
}
