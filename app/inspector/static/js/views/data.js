// Portability and privacy: export (JSON or Markdown, downloaded), import a file, erase a user or a
// project with the receipt shown. Import and erase ask first.

import { busy, button, confirmAction, facts, field, fill, h, section, select } from "../dom.js";

export async function dataView(target, ctx) {
  target.append(h("h1", {}, "Data & privacy"), exportSection(ctx), importSection(ctx), eraseSection(ctx));
}

function exportSection(ctx) {
  const format = select({ name: "format" }, [["json", "JSON (re-importable, with vectors)"], ["markdown", "Markdown (readable)"]], "json");
  const scope = select({ name: "scope" },
    [...(ctx.userId ? [["user", `user ${ctx.userId}${ctx.projectId ? `, project ${ctx.projectId}` : ""}`]] : []),
      ["tenant", "the whole tenant"]], ctx.userId ? "user" : "tenant");
  const result = h("p", { class: "download", "aria-live": "polite" });
  let url = null;
  const run = h("button", { type: "submit" }, "Export");
  const form = h("form", { class: "filters", "aria-label": "Export" }, field("Format", format), field("Scope", scope), run);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(run, async () => {
      const params = { format: format.value };
      if (scope.value === "user") Object.assign(params, { user_id: ctx.userId, project_id: ctx.projectId });
      try {
        const blob = await ctx.api.get("/v1/export", params, { as: "blob" });
        if (url) URL.revokeObjectURL(url);
        url = URL.createObjectURL(blob); // the file never leaves the tab: a blob: URL of this page
        const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-");
        const who = scope.value === "user" ? ctx.userId.replace(/[^\w.-]+/g, "_") : "tenant";
        const name = `engram-${who}-${stamp}.${format.value === "json" ? "json" : "md"}`;
        const a = h("a", { href: url, download: name, class: "button-like" }, `Download ${name}`);
        fill(result, a, ` (${(blob.size / 1024).toFixed(1)} KiB)`);
        a.click();
      } catch (err) {
        ctx.fail(err);
      }
    });
  });
  return section("Export", h("p", { class: "muted" }, "Every memory in scope with its events and proposals; secrets were redacted before storage and are redacted again."), form, result);
}

function importSection(ctx) {
  const file = h("input", { type: "file", accept: ".json,application/json", required: true });
  const run = h("button", { type: "submit" }, "Import");
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "filters", "aria-label": "Import" }, field("Export file (JSON)", file), run);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = file.files && file.files[0];
    if (!chosen) return;
    busy(run, async () => {
      const ok = await confirmAction({
        title: "Import this file?",
        body: `${chosen.name} (${(chosen.size / 1024).toFixed(1)} KiB) is added to this tenant, all or nothing: duplicates are merged and, in each slot, only the newest memory stays current.`,
        confirm: "Import",
      });
      if (!ok) return;
      try {
        const result = await ctx.api.post("/v1/import", await chosen.text());
        fill(out, section("Import result", facts(result)));
        ctx.notify(`Imported ${result.imported} memories.`);
        await ctx.refreshPickers();
      } catch (err) {
        ctx.fail(err);
      }
    });
  });
  return section("Import", form, out);
}

function eraseSection(ctx) {
  if (!ctx.userId) {
    return section("Erase", h("p", { class: "empty" }, "Pick a user above to erase their memories."));
  }
  const project = ctx.projectId;
  const what = project ? `project ${project} of user ${ctx.userId}` : `user ${ctx.userId}`;
  const receipt = h("div", { class: "receipt", "aria-live": "polite" });
  const erase = button(`Erase ${what}`, (e) => busy(e.currentTarget, async () => {
    const ok = await confirmAction({
      title: `Erase ${what}?`,
      body: `This removes for good every memory, message, event, proposal and usage record of ${what}. It cannot be undone; export first if you may need it.`,
      confirm: "Erase for good",
      typed: project || ctx.userId,
    });
    if (!ok) return;
    try {
      const body = { user_id: ctx.userId };
      if (project) body.project_id = project;
      const r = await ctx.api.post("/v1/erase", body);
      fill(receipt, section("Erase receipt", facts({
        user: r.user_id, project: r.project_id ?? "(all, and the global memories)", memories: r.memories,
        messages: r.messages, events: r.events, proposals: r.proposals, "usage events": r.usage_events,
      })));
      ctx.notify(`Erased ${what}.`);
      await ctx.refreshPickers();
    } catch (err) {
      ctx.fail(err);
    }
  }), { class: "danger" });
  return section("Erase", h("p", {}, `A hard delete of ${what}, with a receipt of what was removed.`), erase, receipt);
}
