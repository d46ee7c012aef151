// The waiting room's page script. It gets the fan a place in line (earning it, when the show's bot protection asks,
// with a proof of work solved in a Web Worker and, if the show asks for one, the human check), then follows the
// place on the position stream (polling status where EventSource is missing or keeps failing) until the fan's turn,
// and takes them to the seats. Everything personal travels in HttpOnly cookies (fs_session, fs_place_{show},
// fs_adm_{show}); this script never sees a token.
(function () {
  "use strict";
  var me = document.currentScript;
  var workerURL = me && me.getAttribute("data-worker");
  var show = decodeURIComponent(location.pathname.replace(/^\/queue\//, "").replace(/\/.*$/, ""));
  var base = "/queue/" + encodeURIComponent(show);
  var seatsURL = "/shows/" + encodeURIComponent(show);
  var hdr = { "X-Requested-With": "flashseat", "Accept": "application/json" };
  var first = 0, es = null, pollTimer = null, errors = 0, done = false, polling = false, info = null, signedIn = false;
  var countdown = null, opensAt = 0, lastEvent = 0, stalled = false;
  var entering = false, refusals = 0, skew = 0;

  function $(id) { return document.getElementById(id); }
  var views = ["connecting", "waiting", "paused", "opens", "admitted", "soldout", "closed", "off"];
  function view(name) {
    views.forEach(function (s) { $(s).hidden = s !== name; });
    if (name !== "connecting") $("human").hidden = true;
  }
  function fmt(secs) {
    secs = Math.max(0, Math.round(secs));
    if (secs < 60) return secs + " s";
    var m = Math.floor(secs / 60);
    if (m < 60) return m + " min " + (secs % 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " min";
  }
  // span says a duration in words, rounded down to what a fan can act on: "10 minutes", "90 seconds".
  function span(secs) {
    secs = Math.max(0, Math.floor(secs));
    if (secs < 120) return secs + (secs === 1 ? " second" : " seconds");
    var m = Math.floor(secs / 60);
    if (m < 120) return m + " minutes";
    return Math.floor(m / 60) + " hours";
  }
  function showError(msg) { $("error").textContent = msg || ""; $("error").hidden = !msg; }
  function retryAfter(r, def) { var n = parseInt(r.headers.get("Retry-After") || "", 10); return (n > 0 ? n : def) * 1000; }
  function reconnecting() { showError("Reconnecting… your place is kept."); }
  function progress(title, detail) {
    if ($("connecting-title").textContent !== title) $("connecting-title").textContent = title;
    $("connecting-detail").textContent = detail;
  }
  // now is the server's clock as best known (from the Date of its last answer), for the admission's deadline.
  function now() { return Date.now() + skew; }
  function noteDate(r) {
    var d = Date.parse(r.headers.get("Date") || "");
    if (d) skew = d - Date.now();
  }

  $("fairness").href = base + "/fairness";
  $("showlink").href = seatsURL;
  try {
    var f = sessionStorage.getItem("fs_flash");
    if (f) { sessionStorage.removeItem("fs_flash"); $("flash").textContent = f; $("flash").hidden = false; }
  } catch (e) { /* storage off */ }
  // toSeats goes to the seats. A fan sent back here with a message (an admission that ended) and let straight
  // back in would otherwise land on the seats again with no word of why the choice was lost.
  function toSeats() {
    if (!$("flash").hidden) {
      try { sessionStorage.setItem("fs_flash", "Your admission had ended; you have been let straight back in. Choose your seats again."); } catch (e) { /* storage off */ }
    }
    location.assign(seatsURL);
  }

  // joined remembers, for this tab only, that it has a place in this show's line: a reload then asks for its place
  // without a proof first, rather than a challenge it does not need (each challenge counts against the fan's
  // network). It is a hint, not a secret: the place itself is the fs_place_{show} cookie's.
  var joinedKey = "fs_joined:" + show;
  function joined(on) {
    try {
      if (on === undefined) return sessionStorage.getItem(joinedKey) === "1";
      if (on) sessionStorage.setItem(joinedKey, "1"); else sessionStorage.removeItem(joinedKey);
    } catch (e) { /* storage off */ }
    return false;
  }

  // call sends the fs_session cookie (never a token in JS) and the CSRF header.
  function call(method, path, body) {
    var o = { method: method, headers: hdr, credentials: "same-origin", cache: "no-store" };
    if (body !== undefined) { o.body = JSON.stringify(body); o.headers = Object.assign({ "Content-Type": "application/json" }, hdr); }
    return fetch(path, o);
  }
  function problem(r) { return r.json().catch(function () { return {}; }); }

  // signIn makes sure the browser has an identity (the fs_session cookie), starting a guest session if it has none.
  function signIn() {
    if (signedIn) return Promise.resolve();
    return call("GET", "/api/v1/me").then(function (r) {
      if (r.ok) return;
      if (r.status !== 401) throw new Error("sign-in failed (" + r.status + ")");
      return guest("", 0);
    }).then(function () { signedIn = true; });
  }
  // guest starts a guest session. A network that has started many lately is asked for a proof of work first (the
  // refusal carries the challenge; the solution goes in X-Proof), like a join.
  function guest(proof, tries) {
    var o = { method: "POST", credentials: "same-origin", cache: "no-store", body: "{}",
      headers: Object.assign({ "Content-Type": "application/json" }, hdr) };
    if (proof) o.headers["X-Proof"] = proof;
    return fetch("/api/v1/auth/guest", o).then(function (g) {
      if (g.ok) return;
      if (g.status >= 500) throw new Error("could not start a guest session (" + g.status + ")");
      return problem(g).then(function (p) {
        if (p.reason === "proof_replayed" && tries < 3) return guest("", tries + 1);
        if (p.challenge && tries < 3) return solve(p.challenge).then(function (pr) { return guest(pr, tries + 1); });
        throw { response: g, problem: p, guest: true };
      });
    });
  }

  function loadShow() {
    return fetch("/api/v1/shows/" + encodeURIComponent(show), { headers: { Accept: "application/json" } }).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.json();
    }).then(function (s) {
      info = s;
      $("title").textContent = s.title;
      var t = new Date(s.startsAt);
      $("facts").textContent = t.toLocaleString(undefined, { weekday: "short", day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit" }) +
        " · " + s.venue + ", " + s.city + " · " + s.hall;
      document.title = "Waiting room · " + s.title + " · flashseat";
      if (s.maxSeatsPerBooking) $("group").max = String(s.maxSeatsPerBooking);
    }).catch(function () { $("facts").textContent = "Show details are not available right now; your place in the queue is not affected."; });
  }

  // ---- Earning a place: the proof of work.

  // The solver runs in a Web Worker (pow-worker.js), so the page stays responsive while it hashes. It is started
  // at once, so that its script loads beside the page's other requests.
  var solver = null, solving = null;
  function worker() {
    if (!solver && window.Worker && workerURL) {
      try { solver = new Worker(workerURL); } catch (e) { solver = null; }
    }
    return solver;
  }
  worker();
  // solve finds the challenge's number and resolves to the proof a join carries: base64 of ALTCHA's payload. A
  // newer challenge replaces one still being solved (its promise is rejected with "superseded").
  function solve(ch) {
    if (solving) {
      solving(new Error("superseded"));
      solving = null;
      if (solver) { solver.terminate(); solver = null; }
    }
    return new Promise(function (resolve, reject) {
      var w = worker();
      if (!w) { reject(new Error("unsupported")); return; }
      solving = reject;
      var t0 = window.performance ? performance.now() : 0;
      w.onmessage = function (e) {
        solving = null;
        // How long the fan waited on the solver, for real-user monitoring and the benchmark.
        try { performance.measure("queue-solve", { start: t0, end: performance.now() }); } catch (x) { /* old browser */ }
        var d = e.data || {};
        if (d.error || typeof d.number !== "number") { reject(new Error(d.error || "no solution")); return; }
        resolve(btoa(JSON.stringify({ algorithm: ch.algorithm, challenge: ch.challenge, number: d.number,
          salt: ch.salt, signature: ch.signature, took: d.took })));
      };
      w.onerror = function (e) {
        solving = null;
        if (e && e.preventDefault) e.preventDefault();
        if (solver) { solver.terminate(); solver = null; }
        reject(new Error("unsupported"));
      };
      w.postMessage({ algorithm: ch.algorithm, challenge: ch.challenge, maxnumber: ch.maxnumber, salt: ch.salt });
    });
  }

  // ---- Earning a place: the human check (Turnstile, hCaptcha or reCAPTCHA, as the deployment configures it).

  // The provider's script renders its widget into an element of its class and hands the token to the function
  // named by data-callback; the token is also left in the hidden field named responseField. A token is good for
  // one verification.
  var human = { loaded: false, el: null, token: "", waiting: [], globals: { turnstile: "turnstile", hcaptcha: "hcaptcha", recaptcha: "grecaptcha" } };
  window.fsHumanCheck = function (token) {
    if (!token && human.el && human.check) {
      var input = human.el.querySelector('[name="' + human.check.responseField + '"]');
      token = input ? input.value : "";
    }
    if (!token) return;
    human.token = token;
    var w = human.waiting; human.waiting = [];
    w.forEach(function (resolve) { resolve(token); });
  };
  window.fsHumanCheckExpired = function () { human.token = ""; };
  window.fsHumanCheckError = function () {
    human.token = "";
    showError("The check could not be completed. Try it again; if it keeps failing, reload this page.");
  };
  // humanToken shows the widget and resolves to its token when the fan has passed it.
  function humanToken(hc) {
    human.check = hc;
    $("human").hidden = false;
    progress("Getting you a place in line…", "One more step below: confirm you are a person, and you join the line at once.");
    if (human.token) return Promise.resolve(human.token);
    var p = new Promise(function (resolve) { human.waiting.push(resolve); });
    if (!human.el) {
      human.el = document.createElement("div");
      human.el.className = hc.className;
      human.el.setAttribute("data-sitekey", hc.siteKey);
      human.el.setAttribute("data-callback", "fsHumanCheck");
      human.el.setAttribute("data-expired-callback", "fsHumanCheckExpired");
      human.el.setAttribute("data-error-callback", "fsHumanCheckError");
      $("human-widget").appendChild(human.el);
      var s = document.createElement("script");
      s.src = hc.scriptUrl;
      s.async = true;
      s.onerror = function () { showError("The human check could not load. Check your connection and reload this page."); };
      document.head.appendChild(s);
    }
    return p;
  }
  // humanSpent forgets a token the server has verified (it is good once), and resets the widget for another.
  function humanSpent() {
    if (!human.token) return;
    human.token = "";
    var g = human.check && window[human.globals[human.check.provider]];
    try { if (g && g.reset) g.reset(); } catch (e) { /* the widget renders afresh on its own */ }
  }

  // ---- Joining.

  // earn turns what the queue asks ({challenge, humanCheck}: a challenge's answer or a refusal's) into a join's
  // body; null asks nothing (a fan who has a place, or a show without bot protection).
  function earn(ask) {
    if (!ask || (!ask.challenge && !ask.humanCheck)) return Promise.resolve(undefined);
    var proof = ask.challenge ? solve(ask.challenge) : Promise.resolve("");
    var token = ask.humanCheck ? humanToken(ask.humanCheck) : Promise.resolve("");
    if (ask.challenge) progress("Getting you a place in line…", ask.humanCheck ?
      "One more step below: confirm you are a person, and you join the line at once." :
      "Your browser is doing a quick check that keeps bots out of the queue. It takes a second or two; there is no need to reload.");
    return Promise.all([proof, token]).then(function (r) {
      var body = {};
      if (r[0]) body.proof = r[0];
      if (r[1]) body.humanToken = r[1];
      return body;
    });
  }

  // challenge asks what a new place costs: null when the show asks nothing (204).
  function challenge() {
    return call("GET", base + "/challenge").then(function (r) {
      if (r.status === 204) return null;
      if (r.ok) return r.json().then(function (c) { return { challenge: c, humanCheck: c.humanCheck }; });
      if (r.status === 401) signedIn = false;
      if (r.status === 401 || r.status >= 500) throw new Error("retry"); // a lapsed session, an outage: again
      return problem(r).then(function (p) { throw { response: r, problem: p }; });
    });
  }

  // enter gets the fan a place: with a fresh challenge solved, or, given ask (a refusal's), with what it asks. A
  // tab that joined before (a reload) first asks for its place without a proof.
  function enter(ask) {
    if (done || entering) return;
    entering = true;
    stop();
    view("connecting");
    signIn().then(function () {
      if (ask !== undefined) return ask;
      if (joined()) return null;
      return challenge();
    }).then(function (a) {
      return earn(a).then(function (body) { return post(body, a); });
    }).catch(function (err) {
      if (err && err.message === "superseded") return; // a newer challenge is being solved
      entering = false;
      if (err && err.response) return refused(err.response, err.problem, null, err.guest);
      if (err && err.message === "unsupported") {
        showError("This browser cannot run the check the queue needs to keep bots out. Update it, or try another browser.");
        return;
      }
      reconnecting();
      setTimeout(function () { enter(ask); }, 3000);
    });
  }

  // post sends the join, and again after an outage with the same body: a proof is good until it is spent.
  function post(body, ask) {
    return call("POST", base + "/join", body).then(function (r) {
      noteDate(r);
      if (r.ok) {
        return r.json().then(function (p) {
          entering = false; refusals = 0;
          if (body && body.humanToken) humanSpent();
          joined(true);
          // When the fan got their place, from the page's navigation: for real-user monitoring and the benchmark.
          try { performance.mark("queue-joined"); } catch (e) { /* old browser */ }
          showError("");
          onPlace(p);
          if (!done && p.status !== "closed") { if (polling) poll(); else listen(); }
        });
      }
      if (r.status === 401) { entering = false; signedIn = false; setTimeout(enter, 500); return; }
      if (r.status === 503 || r.status >= 500) { // opening (the draw) or an outage: the same join again
        reconnecting();
        setTimeout(function () { post(body, ask); }, retryAfter(r, 2));
        return;
      }
      return problem(r).then(function (p) {
        entering = false;
        refused(r, p, body);
      });
    }, function () {
      reconnecting();
      setTimeout(function () { post(body, ask); }, 3000);
    });
  }

  // refused answers a refusal of a join, status poll or stream: by earning the place where the answer says how,
  // else by telling the fan why, in words.
  function refused(r, p, body, guest) {
    if (done) return;
    stop();
    var reason = p.reason || "", again = p.challenge || p.humanCheck ? { challenge: p.challenge, humanCheck: p.humanCheck } : null;
    if (guest) again = null; // a guest session's challenge buys a session, not a place
    // A human-check token is verified once, whatever the answer, unless the proof was refused before it was looked at.
    if (body && body.humanToken && reason !== "proof_required" && reason !== "proof_invalid") humanSpent();
    if (reason) joined(false);
    refusals++;
    if (refusals > 5) { // something keeps refusing what this page brings: slow down rather than spin
      refusals = 0;
      showError("We could not get you a place in line just now. Trying again in a few seconds…");
      setTimeout(function () { enter(again || undefined); }, 5000);
      return;
    }
    switch (reason) {
    case "proof_required":
    case "proof_invalid": // expired or malformed: solve the fresh one
      showError("");
      return enter(again || undefined);
    case "proof_replayed": // spent already (a join sent twice): a fresh challenge
      showError("");
      return enter();
    case "human_required":
      showError("");
      return enter(again || undefined);
    case "human_failed":
      showError("The human check did not pass. Please try it again.");
      return enter(again || undefined);
    case "account_required":
      view("connecting");
      progress("This sale is for signed-in fans", "Only fans signed in to a flashseat account can join this queue.");
      return showError("This sale is for fans with a flashseat account. Sign in to your account, then open this page again.");
    case "prefix_limit":
      view("connecting");
      progress("Waiting to try again…", "We will try again on our own; keep this page open.");
      showError(guest ? "Too many people have started sessions from your network (your Wi-Fi's or mobile carrier's address) in the last few minutes. We will try again in a minute." :
        "Too many places in this queue have already been taken from your network (your Wi-Fi's or mobile carrier's address). We will try again in a minute.");
      setTimeout(function () { enter(); }, retryAfter(r, 60));
      return;
    case "prefix_blocked":
      view("connecting");
      progress("We could not give you a place", "The organiser has blocked the network you are on from this queue.");
      return showError("Your network may not join this queue. If you think this is a mistake, try another connection (mobile data rather than Wi-Fi, say) or contact the organiser.");
    case "browser":
      view("connecting");
      progress("This browser already has a place", "Another sign-in in this browser holds this browser's place in line.");
      return showError("This browser already has a place in this queue under another sign-in. Go back to the tab or account that joined, or use another browser.");
    }
    if (again) return enter(again);
    if (r.status === 404) {
      view("connecting");
      progress("No such queue", "Check the link, or find the show on the home page.");
      return showError("There is no waiting room for this show. Check the link, or find the show on the home page.");
    }
    if (r.status === 429) { reconnecting(); setTimeout(function () { enter(); }, retryAfter(r, 2)); return; }
    showError("We could not get you a place in line" + (p.detail ? ": " + p.detail : ".") + " Reload the page to try again.");
  }

  // ---- Following the place.

  function onPlace(p) {
    if (done) return;
    if (p.turnHoldSeconds) holdNote(p.turnHoldSeconds);
    if (p.status === "admitted") return admitted(p);
    if (p.status === "sold_out") { clearCountdown(); view("soldout"); return; }
    if (p.status === "closed") return closed();
    if (p.paused) return onPaused(p);
    if (p.position) return onPosition(p);
    onWaiting(p);
  }
  // holdNote tells the fan the truth about a locked phone: the page stops while the phone sleeps, and the waiting
  // room holds a turn that came meanwhile for the show's turn hold.
  function holdNote(secs) {
    $("hold").textContent = "When it is your turn this page takes you to the seats. If your phone locks or you switch apps, " +
      "this page stops, but your turn is held for " + span(secs) + ": come back to this page within that time and you go straight in. Reloading keeps your place.";
  }
  function clearCountdown() { if (countdown) { clearInterval(countdown); countdown = null; } }
  function onPosition(p) {
    clearCountdown();
    view("waiting");
    if (!first || p.position > first) first = p.position;
    $("position").textContent = p.position.toLocaleString();
    var pct = Math.round(100 * (1 - (p.position - 1) / first));
    $("progress").style.width = pct + "%";
    $("bar").setAttribute("aria-valuenow", String(pct));
    $("eta").textContent = p.etaSeconds > 0 ? "About " + fmt(p.etaSeconds) + " to go." : "Almost there…";
  }
  function onPaused(p) {
    clearCountdown();
    view("paused");
    $("paused-pos").textContent = p.position ? " (number " + p.position.toLocaleString() + ")" : "";
  }
  function onWaiting(p) {
    view("opens");
    if (!p.opensAt) { $("countdown").textContent = "Opening soon"; return; }
    // Count down locally between the server's (infrequent) waiting events, from the server's own ETA.
    opensAt = Date.now() + (p.etaSeconds || 0) * 1000;
    function tick() {
      var left = (opensAt - Date.now()) / 1000;
      $("countdown").textContent = left > 0 ? "Opens in " + fmt(left) : "Opening… drawing places";
    }
    tick();
    if (!countdown) countdown = setInterval(tick, 1000);
  }
  // closed: the queue is off (the seats are open to all), or the organiser closed the sale.
  function closed() {
    stop();
    var check = info ? Promise.resolve(info) : fetch("/api/v1/shows/" + encodeURIComponent(show)).then(function (r) { return r.ok ? r.json() : null; });
    check.then(function (s) {
      if (s && !s.queueEnabled && !s.saleClosedAt) {
        done = true;
        view("off");
        location.replace(seatsURL);
        return;
      }
      view("closed");
    }).catch(function () { view("closed"); });
  }
  // notify tells a fan whose tab is in the background that their turn came, and how long they have to choose.
  function notify(expiresAt) {
    if (!window.Notification || Notification.permission !== "granted") return;
    var what = info ? info.title : "the show", left = expiresAt ? (Date.parse(expiresAt) - now()) / 1000 : 0;
    var body = left >= 60 ? "Choose your seats for " + what + " within " + span(left) + "." : "Choose your seats for " + what + " now.";
    try { new Notification("It's your turn", { body: body, tag: "fs-" + show }); } catch (e) { /* some browsers only notify from a service worker */ }
  }
  // admitted: status sets the fs_adm_{show} cookie (the token stays out of this script and out of any URL), then
  // the fan goes to the seats.
  function admitted(p) {
    if (done) return;
    done = true; stop(); clearCountdown(); view("admitted"); showError("");
    joined(false);
    document.title = "✔ Your turn! · " + (info ? info.title : "flashseat");
    notify(p && p.expiresAt);
    call("GET", base + "/status").then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.json();
    }).then(function (s) {
      if (s.status !== "admitted") { done = false; return onPlace(s); }
      toSeats();
    }).catch(function () { done = false; reconnecting(); setTimeout(poll, 2000); });
  }
  function stop() {
    if (es) { es.close(); es = null; }
    if (pollTimer) { clearTimeout(pollTimer); pollTimer = null; }
  }

  // The stream sends a position at least every 2 s while the fan waits, and repeats a steady state (before the
  // opening, sold out) every 10 s. A stream that stays silent longer is stalled (the queue's store may be down
  // while the connection stays open): say so, and poll status, whose 503 tells when it is back.
  setInterval(function () {
    if (!es || done || stalled) return;
    var quiet = ["opens", "soldout", "paused"].some(function (v) { return !$(v).hidden; }) ? 25000 : 8000;
    if (Date.now() - lastEvent > quiet) { stalled = true; stop(); reconnecting(); poll(); }
  }, 2000);

  function listen() {
    if (!window.EventSource) return poll();
    polling = false;
    lastEvent = Date.now();
    es = new EventSource(base + "/events");
    function data(e) { lastEvent = Date.now(); errors = 0; showError(""); try { return JSON.parse(e.data); } catch (x) { return {}; } }
    es.addEventListener("position", function (e) { var d = data(e); d.status = "waiting"; onPlace(d); });
    es.addEventListener("waiting", function (e) { onPlace(data(e)); });
    es.addEventListener("admitted", function (e) { admitted(data(e)); });
    es.addEventListener("sold_out", function (e) { data(e); onPlace({ status: "sold_out" }); });
    es.addEventListener("closed", function (e) { data(e); closed(); });
    es.onerror = function () {
      if (done) return;
      errors++;
      reconnecting();
      // Refused (the place lapsed: the answer is not a stream, and EventSource gives up), or failing again and
      // again (an outage, a proxy that buffers): poll status, which says which.
      if (es && es.readyState === 2 || errors >= 3) { stop(); poll(); }
    };
  }
  function poll() {
    polling = true;
    if (pollTimer) { clearTimeout(pollTimer); pollTimer = null; }
    call("GET", base + "/status").then(function (r) {
      noteDate(r);
      if (r.status === 404) { // our place lapsed (away too long, or lost with the store): join again
        if (stalled) { stalled = false; polling = false; }
        joined(false);
        return enter();
      }
      if (r.status === 401) { signedIn = false; return enter(); }
      if (r.status === 403 || r.status === 409 || r.status === 422 || (r.status === 429 && r.headers.get("Content-Type") === "application/problem+json")) {
        return problem(r).then(function (p) {
          if (!p.reason) { reconnecting(); pollTimer = setTimeout(poll, retryAfter(r, 2)); return; }
          if (stalled) { stalled = false; polling = false; }
          refused(r, p, null);
        });
      }
      if (!r.ok) { reconnecting(); pollTimer = setTimeout(poll, retryAfter(r, 2)); return; }
      var wait = retryAfter(r, 2);
      return r.json().then(function (p) {
        showError(""); onPlace(p);
        if (done || p.status === "closed") return;
        if (stalled) { stalled = false; listen(); return; } // the store is back: the stream again
        pollTimer = setTimeout(poll, wait);
      });
    }).catch(function () { reconnecting(); pollTimer = setTimeout(poll, 3000); });
  }

  // resumed asks for the place at once when the page comes back: a phone that slept, a tab brought to the front, a
  // page restored from the back-forward cache. While it was stopped its stream may have died and its turn may have
  // come and gone; a status poll within the show's turn hold puts the fan back at the head of the line.
  function resumed() {
    if (done || entering) return;
    lastEvent = Date.now(); // the silence was the page's own, not the stream's
    if (polling || !es) { if (polling) poll(); return; }
    call("GET", base + "/status").then(function (r) {
      noteDate(r);
      if (!r.ok) { stop(); poll(); return; } // poll tells a lapsed place, a refusal and an outage apart
      return r.json().then(function (p) {
        onPlace(p);
        if (!done && p.status !== "closed" && (!es || es.readyState === 2)) { stop(); listen(); }
      });
    }).catch(function () { /* the stream's own error handling reconnects */ });
  }
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "visible") resumed(); });
  document.addEventListener("resume", resumed); // Page Lifecycle: a frozen page thawed
  window.addEventListener("pageshow", function (e) { if (e.persisted) resumed(); });

  // The waitlist, offered when the show is sold out.
  $("waitlist-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var n = parseInt($("group").value, 10);
    call("POST", "/api/v1/shows/" + encodeURIComponent(show) + "/waitlist", { seats: n }).then(function (r) {
      return problem(r).then(function (p) {
        if (!r.ok) { showError("Could not join the waitlist: " + (p.detail || p.title || r.status)); return; }
        showError("");
        $("waitlist-form").hidden = true;
        $("waitlist-status").textContent = "You are number " + p.position + " on the waitlist for " + n + " seat" + (n > 1 ? "s" : "") + ". If seats come back, we offer them to you here.";
        $("waitlist-status").hidden = false;
      });
    }).catch(function () { showError("Could not reach flashseat to join the waitlist; try again."); });
  });

  // Notifications: asked for only when the fan clicks, as browsers require.
  if (window.Notification && Notification.permission === "default") {
    $("notify-row").hidden = false;
    $("notify").addEventListener("click", function () {
      Notification.requestPermission().then(function (p) {
        $("notify").textContent = p === "granted" ? "We will notify you" : "Notifications are off";
        $("notify").disabled = true;
      });
    });
  }

  // The show's details and the place are fetched side by side: the proof of work is solved while the fan reads.
  loadShow();
  enter();
})();
