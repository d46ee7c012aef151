// widget.js: siteverifytest's stand-in for a human-check provider's widget script (Turnstile's, hCaptcha's and
// reCAPTCHA's api.js), for tests only. Like theirs it is a classic script, loaded with async or defer, that renders
// into every element of the providers' classes (cf-turnstile, h-captcha, g-recaptcha) unless loaded with
// ?render=explicit, calls ?onload=name when ready, and offers turnstile / hcaptcha / grecaptcha .render(container,
// params), .reset(id) and .getResponse(id). Where the real widgets run a challenge in an iframe, this one renders a
// real button, "I am human"; pressed, it fetches a one-time token from the test server (GET /token, CORS), puts it
// in the provider's hidden response field inside the element and calls the element's data-callback function.
(() => {
  "use strict";
  const src = new URL(document.currentScript.src); // read now: currentScript is null once the script has run
  const kinds = [
    { global: "turnstile", className: "cf-turnstile", field: "cf-turnstile-response" },
    { global: "hcaptcha", className: "h-captcha", field: "h-captcha-response" },
    { global: "grecaptcha", className: "g-recaptcha", field: "g-recaptcha-response" },
  ];
  const widgets = [];

  // named finds a callback given as a function (render's params) or as the name of a global (data-* attributes).
  function named(f) {
    if (typeof f === "function") return f;
    if (typeof f === "string" && typeof window[f] === "function") return window[f];
    return null;
  }

  function find(id) {
    return id === undefined ? widgets[0] : widgets.find((w) => w.id === id || w.el === id);
  }

  function render(kind, container, params = {}) {
    const el = typeof container === "string" ? document.querySelector(container) : container;
    if (!el) throw new Error(kind.global + ".render: no element " + container);
    const known = widgets.find((w) => w.el === el);
    if (known) return known.id;
    const opts = {
      sitekey: params.sitekey || el.dataset.sitekey || "",
      callback: params.callback || el.dataset.callback,
      error: params["error-callback"] || el.dataset.errorCallback,
    };
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "I am human";
    const status = document.createElement("span");
    status.setAttribute("role", "status");
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = kind.field;
    el.replaceChildren(button, status, input);
    const w = { id: String(widgets.length), el, button, status, input };
    widgets.push(w);
    button.addEventListener("click", async () => {
      button.disabled = true;
      status.textContent = "Checking…";
      try {
        const r = await fetch(src.origin + "/token?sitekey=" + encodeURIComponent(opts.sitekey),
          { mode: "cors", credentials: "omit", cache: "no-store" });
        const body = await r.json();
        if (!r.ok || !body.token) throw new Error(body.error || "status " + r.status);
        input.value = body.token;
        status.textContent = "Verified";
        const cb = named(opts.callback);
        if (cb) cb(body.token);
      } catch (e) {
        button.disabled = false;
        status.textContent = "The check failed. Try again.";
        const cb = named(opts.error);
        if (cb) cb(String(e.message || e));
        else console.error(kind.global + ": " + (e.message || e)); // the real widgets throw without an error-callback
      }
    });
    return w.id;
  }

  function reset(id) {
    const w = find(id);
    if (!w) return;
    w.input.value = "";
    w.status.textContent = "";
    w.button.disabled = false;
  }

  for (const kind of kinds) {
    if (window[kind.global]) continue;
    window[kind.global] = {
      render: (container, params) => render(kind, container, params),
      reset,
      getResponse: (id) => (find(id) ? find(id).input.value : ""),
    };
  }

  function start() {
    if (src.searchParams.get("render") !== "explicit") {
      for (const kind of kinds) {
        for (const el of document.getElementsByClassName(kind.className)) render(kind, el);
      }
    }
    const onload = named(src.searchParams.get("onload"));
    if (onload) onload();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
