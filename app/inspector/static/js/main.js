// The shell: sign-in with the tenant's key, the user and project pickers, the views behind hash routes.

import { ApiError, all, api, session } from "./api.js";
import { button, field, fill, h } from "./dom.js";
import { chatView } from "./views/chat.js";
import { dataView } from "./views/data.js";
import { dreamView } from "./views/dream.js";
import { memoriesView, memoryView } from "./views/memories.js";
import { recallView } from "./views/recall.js";
import { timelineView } from "./views/timeline.js";
import { usageView } from "./views/usage.js";

const VIEWS = [
  ["chat", "Chat", chatView],
  ["memories", "Memories", memoriesView],
  ["recall", "Recall", recallView],
  ["timeline", "Timeline", timelineView],
  ["dream", "Dreaming", dreamView],
  ["usage", "Usage", usageView],
  ["data", "Data & privacy", dataView],
];
const SCOPE = "engram.inspector.scope";

const $ = (id) => document.getElementById(id);

/** What every view needs: the API, the picked user and project, and a way to show messages. */
const ctx = {
  api,
  userId: "",
  projectId: "",
  notify,
  fail,
  go: (route) => { location.hash = `#/${route}`; },
  refreshPickers: () => loadUsers(),
  reload: () => render().catch(fail),
};

/** A message at the top of the page, until dismissed, replaced, or another view is opened. */
function notify(text, kind = "info") {
  const box = $("notice");
  const close = button("Dismiss", () => box.replaceChildren(), { class: "link", "aria-label": "Dismiss message" });
  fill(box, h("div", { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status" },
    h("span", {}, text), close));
}

/** An API or script error as a message; a refused key sends the person back to the sign-in form. */
function fail(err) {
  if (err instanceof ApiError && err.status === 401) {
    session.signOut();
    showSignIn(`This API key was not accepted (${err.detail}). Enter a valid key for your tenant.`);
    return;
  }
  const text = err instanceof ApiError
    ? `${err.status ? `Error ${err.status}` : "Error"} (${err.code}): ${err.detail}`
    : `Something went wrong in the page: ${err && err.message ? err.message : err}`;
  notify(text, "error");
}

function showSignIn(message = "") {
  $("app").hidden = true;
  const input = h("input", { id: "key-input", type: "password", autocomplete: "off", required: true,
    spellcheck: "false", placeholder: "egm_…" });
  const error = h("p", { id: "signin-error", class: "notice notice-error", role: "alert", hidden: !message }, message);
  const form = h("form", { class: "signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "Engram inspector"),
    h("p", {}, "Enter your tenant's API key. It is kept in this tab only (session storage) and sent as a bearer token; closing the tab forgets it."),
    field("API key", input),
    error,
    h("button", { type: "submit" }, "Open the inspector"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    try {
      await api.get("/v1/users", { limit: 1 }, { key }); // checks the key before keeping it
    } catch (err) {
      const detail = err instanceof ApiError && err.status === 401
        ? `This API key was not accepted (${err.detail}).`
        : `The key could not be checked: ${err.message}`;
      fill(error, detail);
      error.hidden = false;
      input.focus();
      return;
    }
    session.signIn(key);
    input.value = "";
    await start();
  });
  fill($("signin"), form);
  $("signin").hidden = false;
  input.focus();
}

function saveScope() {
  sessionStorage.setItem(SCOPE, JSON.stringify({ userId: ctx.userId, projectId: ctx.projectId }));
}

function loadScope() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(SCOPE) || "{}");
    ctx.userId = typeof saved.userId === "string" ? saved.userId : "";
    ctx.projectId = typeof saved.projectId === "string" ? saved.projectId : "";
  } catch {
    ctx.userId = ctx.projectId = "";
  }
}

async function loadUsers() {
  const { items, truncated } = await all("/v1/users");
  const picker = $("user-select");
  const known = items.some((u) => u.user_id === ctx.userId);
  fill(picker,
    h("option", { value: "" }, items.length ? "— choose a user —" : "— no users yet —"),
    items.map((u) => h("option", { value: u.user_id, selected: u.user_id === ctx.userId },
      `${u.user_id} (${u.live} live / ${u.memories})`)),
    ctx.userId && !known ? h("option", { value: ctx.userId, selected: true }, `${ctx.userId} (new)`) : null);
  $("user-count").textContent = truncated ? `first ${items.length} users` : `${items.length} users`;
  await loadProjects();
}

async function loadProjects() {
  const picker = $("project-select");
  const items = ctx.userId ? (await all("/v1/projects", { user_id: ctx.userId })).items : [];
  if (ctx.projectId && !items.some((p) => p.project_id === ctx.projectId)) {
    items.push({ project_id: ctx.projectId, live: 0, memories: 0, fresh: true });
  }
  fill(picker,
    h("option", { value: "" }, "— none (global memories) —"),
    items.map((p) => h("option", { value: p.project_id, selected: p.project_id === ctx.projectId },
      p.fresh ? `${p.project_id} (new)` : `${p.project_id} (${p.live} live / ${p.memories})`)));
  picker.disabled = !ctx.userId;
}

async function pickUser(userId) {
  ctx.userId = userId;
  ctx.projectId = "";
  saveScope();
  $("view").setAttribute("aria-busy", "true");
  await loadUsers();
  await render();
}

function wirePickers() {
  $("user-select").addEventListener("change", (e) => pickUser(e.target.value).catch(fail));
  $("project-select").addEventListener("change", (e) => {
    ctx.projectId = e.target.value;
    saveScope();
    render().catch(fail);
  });
  $("new-user").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = $("new-user-id");
    const value = input.value.trim();
    if (!value) return;
    input.value = "";
    pickUser(value).catch(fail);
  });
  $("new-project").addEventListener("submit", (e) => {
    e.preventDefault();
    const input = $("new-project-id");
    const value = input.value.trim();
    if (!value || !ctx.userId) return;
    input.value = "";
    ctx.projectId = value;
    saveScope();
    loadProjects().then(render).catch(fail);
  });
  $("sign-out").addEventListener("click", () => {
    session.signOut();
    sessionStorage.removeItem(SCOPE);
    $("notice").replaceChildren();
    showSignIn();
  });
}

function route() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  return { name: name || "memories", arg: rest.length ? decodeURIComponent(rest.join("/")) : null };
}

let renderCount = 0;
let shownRoute = null;

async function render() {
  if (!session.key()) return;
  const { name, arg } = route();
  if (location.hash !== shownRoute) $("notice").replaceChildren(); // messages belong to the view they came from
  shownRoute = location.hash;
  const entry = VIEWS.find(([id]) => id === name);
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const main = $("view");
  const mine = ++renderCount; // a slower earlier render must not overwrite a later one
  const target = h("div", { class: "view" });
  main.setAttribute("aria-busy", "true");
  fill(main, h("p", { class: "muted" }, "Loading…"));
  try {
    if (name === "memories" && arg) await memoryView(target, ctx, arg);
    else if (entry) await entry[2](target, ctx);
    else target.append(h("p", {}, "There is no such view. Pick one from the menu."));
  } catch (err) {
    fail(err);
    target.append(h("p", { class: "muted" }, "This view could not be loaded; see the message above."));
  }
  if (mine === renderCount) {
    fill(main, target);
    main.removeAttribute("aria-busy");
    document.title = `${entry ? entry[1] : "Inspector"} · Engram inspector`;
  }
}

async function start() {
  $("signin").hidden = true;
  $("app").hidden = false;
  loadScope();
  try {
    await loadUsers();
  } catch (err) {
    fail(err);
    return;
  }
  await render();
  // To the view for keyboard and screen reader users, unless they have already moved on meanwhile.
  if (document.activeElement === document.body) $("view").focus({ preventScroll: true });
}

function buildNav() {
  fill($("nav"), h("ul", {}, VIEWS.map(([id, label]) => h("li", {}, h("a", { href: `#/${id}`, dataset: { view: id } }, label)))));
}

window.addEventListener("error", (e) => notify(`Something went wrong in the page: ${e.message}`, "error"));
window.addEventListener("unhandledrejection", (e) => fail(e.reason));
window.addEventListener("hashchange", () => render().catch(fail));

buildNav();
wirePickers();
if (session.key()) start().catch(fail);
else showSignIn();
