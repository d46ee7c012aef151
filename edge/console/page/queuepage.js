// The queue page's form, in the Bypass codes panel: for the show selected there, the message every fan on the
// show's queue page reads, and the page's language for browsers that ask for neither English nor Hindi. The panel
// (codes.js) reads it beside the show's codes, so that the section fills in at once, for one show.
import { $ } from "./dom.js";

// queuePage wires the form: show() is the show selected, alert the panel's box for what did not work. It returns
// read(id), which fetches a show's queue settings, and fill(id, q), which puts their page into the form.
export function queuePage({ call, changed, show, alert }) {
  const path = (id) => `/admin/v1/shows/${encodeURIComponent(id)}/queue`;
  // The show whose page the form holds, and whether the operator has changed it since: a read that answers
  // late (the panel reads a show again when it is picked) must not wipe what the operator is typing.
  let holds = "";
  let edited = false;
  for (const id of ["page-message", "page-language"]) $(id).addEventListener("input", () => { edited = true; });

  $("page-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = show();
    $("page-result").textContent = "";
    alert.textContent = "";
    try {
      await call("PUT", path(id), { page: { message: $("page-message").value, language: $("page-language").value } });
      if (holds === id) edited = false;
      $("page-result").textContent = `Saved: the queue page of ${id} shows it within a second.`;
      changed();
    } catch (e) { alert.textContent = `Saving the queue page did not work: ${e.message}`; }
  });

  return {
    read: (id) => call("GET", path(id)),
    fill(id, q) {
      if (id === holds && edited) return;
      holds = id;
      edited = false;
      const page = q.page || {};
      $("page-message").value = page.message || "";
      $("page-language").value = page.language || "en";
    },
  };
}
