// The operator console. Every call goes to this origin with the session cookie (HttpOnly: this script never sees
// it) and the CSRF header; the operator token is sent once, at sign-in, and is not kept.
import { mountBots } from './bots.js';

const $ = (id) => document.getElementById(id);
const shows = new Map(); // showId -> {el, figures}
let live = null;

async function api(method, path, body) {
  const opts = { method, credentials: 'same-origin', headers: { 'X-Requested-With': 'flashseat', 'Accept': 'application/json' } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  let data = null;
  if ((r.headers.get('Content-Type') || '').includes('json')) data = await r.json();
  if (r.status === 401 && path !== '/admin/session') signedOut('Your session has ended; sign in again.');
  if (!r.ok) {
    const err = new Error((data && (data.detail || data.title)) || `The server answered ${r.status}.`);
    err.status = r.status;
    throw err;
  }
  return data;
}

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

// ---- sign-in ----
function signedIn(s) {
  $('signin').hidden = true;
  $('app').hidden = false;
  $('who').hidden = false;
  $('operator').textContent = `Signed in as ${s.operator}.`;
  $('token').value = '';
  startLive();
  loadAudit();
  loadHooks();
}

function signedOut(msg) {
  if (live) { live.close(); live = null; }
  $('app').hidden = true;
  $('who').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = msg || '';
}

$('signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('signin-error').textContent = '';
  try {
    const s = await api('POST', '/admin/session', { token: $('token').value, operator: $('opname').value });
    signedIn(s);
  } catch (e) {
    $('token').value = '';
    $('signin-error').textContent = e.status === 401 ? 'Sign-in refused: that is not the operator token.' : e.message;
    $('token').focus();
  }
});

$('signout').addEventListener('click', async () => {
  try { await api('DELETE', '/admin/session'); } catch (e) { /* signed out either way */ }
  signedOut('You have signed out.');
});

// ---- live figures ----
// The figures come on an event stream. Where EventSource is missing, or the stream fails three times without
// opening or has not opened after 20 s (a network or proxy that refuses event streams or holds them back), the
// console asks for them every two seconds instead. live is then the poller, with the EventSource's close().
function startLive() {
  if (live) return;
  if (!window.EventSource) return pollLive();
  const es = new EventSource('/admin/live');
  live = es;
  let failures = 0;
  const giveUp = () => {
    clearTimeout(opening);
    es.close();
    live = null;
    pollLive();
  };
  const opening = setTimeout(() => { if (es.readyState === EventSource.CONNECTING) giveUp(); }, 20000);
  es.addEventListener('figures', (ev) => render(JSON.parse(ev.data)));
  es.onopen = () => {
    clearTimeout(opening);
    failures = 0;
    $('status').textContent = 'Live: figures update every second.';
  };
  es.onerror = async () => {
    if (++failures >= 3) return giveUp();
    $('status').textContent = 'Reconnecting to live figures…';
    try {
      await api('GET', '/admin/session');
    } catch (e) {
      if (e.status === 401) signedOut('Your session has ended; sign in again.');
    }
  };
}

function pollLive() {
  let timer = null;
  const poller = { close: () => clearTimeout(timer) };
  live = poller;
  const tick = async () => {
    try {
      const snap = await api('GET', '/admin/figures');
      render(snap);
      $('status').textContent = `Figures of ${new Date(snap.at).toLocaleTimeString('en-GB')}, read every two seconds: live updates cannot reach this browser.`;
    } catch (e) {
      if (e.status === 401) return; // api() has signed the console out
      $('status').textContent = `Could not read the figures: ${e.message} Retrying…`;
    }
    if (live === poller) timer = setTimeout(tick, 2000);
  };
  tick();
}

// utc reads a datetime-local input's value as UTC (the console's times are all UTC).
const utc = (v) => new Date(`${v}Z`).toISOString();
const num = (n) => Number(n || 0).toLocaleString('en');
const money = (n, cur) => `${(Number(n || 0) / 100).toLocaleString('en', { minimumFractionDigits: 2 })} ${cur}`;
const dur = (s) => (s <= 0 ? 'none in line' : s < 90 ? `${s} s` : `${Math.round(s / 60)} min`);

const bots = mountBots({ api, el, onChange: () => loadAudit() });

function render(snap) {
  bots.render(snap);
  $('breaker').textContent = snap.breaker || 'unknown';
  $('app-error').textContent = snap.error || '';
  const seen = new Set();
  for (const f of snap.shows || []) {
    seen.add(f.showId);
    let s = shows.get(f.showId);
    if (!s) { s = card(f); shows.set(f.showId, s); $('shows').append(s.el); addShowOption(f); }
    update(s, f);
  }
  for (const [id, s] of shows) if (!seen.has(id)) { s.el.remove(); shows.delete(id); }
  $('status').textContent = `Live: figures of ${new Date(snap.at).toLocaleTimeString('en-GB')} UTC+local.`;
}

function addShowOption(f) {
  $('fan-show').append(el('option', { value: f.showId, text: `${f.title} (${f.showId})` }));
}

const FIGS = [
  ['waiting', 'waiting'], ['active', 'active now'], ['admitted', 'admitted in total'], ['rate', 'admission rate'],
  ['eta', 'wait of the last fan'], ['available', 'available'], ['held', 'held'], ['sold', 'sold'],
  ['revenue', 'revenue'], ['conversion', 'admitted fans who bought'], ['failures', 'payment failures'],
];

function card(f) {
  const id = f.showId;
  const figs = el('dl', { class: 'figs' });
  const dd = {};
  for (const [k, label] of FIGS) {
    dd[k] = el('dd', { 'data-f': k });
    figs.append(el('div', {}, el('dt', { text: label }), dd[k]));
  }
  const err = el('p', { class: 'error', role: 'alert' });
  const act = async (what, fn) => {
    err.textContent = '';
    try { await fn(); loadAudit(); } catch (e) { err.textContent = `${what} failed: ${e.message}`; }
  };
  const queue = el('input', { type: 'checkbox', role: 'switch', id: `q-${id}` });
  queue.addEventListener('change', () => act('Switching the queue', async () => {
    queue.disabled = true;
    try { await api('PUT', `/admin/v1/shows/${id}/queue`, { enabled: queue.checked }); } finally { queue.disabled = false; }
  }));
  const pause = el('button', { type: 'button', 'data-c': 'pause' });
  pause.addEventListener('click', () => act('Pausing admission', async () => {
    const paused = pause.dataset.paused !== 'true';
    await api('PUT', `/admin/v1/shows/${id}/queue`, { paused });
    setPaused(pause, paused);
  }));
  const rate = el('input', { type: 'number', min: '0.1', step: '0.1', id: `r-${id}`, required: '' });
  const maxA = el('input', { type: 'number', min: '1', step: '1', id: `m-${id}`, required: '' });
  const ttl = el('input', { type: 'number', min: '10', step: '1', id: `t-${id}`, required: '' });
  const bot = bots.settingsFields(id);
  const settings = el('form', { class: 'settings' },
    el('label', { for: `r-${id}`, text: 'Admission rate (fans per second)' }), rate,
    el('label', { for: `m-${id}`, text: 'Max active fans' }), maxA,
    el('label', { for: `t-${id}`, text: 'Admission token lifetime (seconds)' }), ttl,
    ...bot.fields,
    el('button', { type: 'submit', text: 'Save queue settings' }));
  settings.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act('Saving the queue settings', () => api('PUT', `/admin/v1/shows/${id}/queue`, {
      admitPerSecond: Number(rate.value), maxActive: Number(maxA.value), tokenTtlSeconds: Number(ttl.value),
      ...bot.body(),
    }));
  });
  const opens = el('input', { type: 'datetime-local', id: `o-${id}`, required: '' });
  const opening = el('form', { class: 'opening' },
    el('label', { for: `o-${id}`, text: 'Sale opens at (UTC)' }), opens,
    el('button', { type: 'submit', text: 'Schedule opening' }));
  opening.addEventListener('submit', (ev) => {
    ev.preventDefault();
    act('Scheduling the opening', () => api('PATCH', `/admin/v1/shows/${id}`, { saleStartsAt: utc(opens.value) }));
  });
  const close = el('button', { type: 'button', 'data-c': 'close', text: 'Close sale' });
  close.addEventListener('click', () => {
    if (close.dataset.confirm !== 'true') {
      close.dataset.confirm = 'true';
      close.textContent = 'Confirm: close the sale now';
      return;
    }
    act('Closing the sale', () => api('POST', `/admin/v1/shows/${id}/close`));
  });
  const fair = el('p', { 'data-c': 'fairness' });
  const details = el('details', {}, el('summary', { text: 'Fairness of the queue' }), fair);
  details.addEventListener('toggle', () => { if (details.open) loadFairness(id, fair); });
  const title = el('h3', { id: `h-${id}` });
  const meta = el('p', { class: 'meta' });
  const e = el('article', { class: 'show', 'data-show': id, 'aria-labelledby': `h-${id}` }, title, meta, figs,
    el('div', { class: 'controls' },
      el('p', {}, queue, el('label', { for: `q-${id}`, text: `Waiting room queue on for ${f.title}` })),
      el('p', {}, pause, ' ', close), settings, opening, details), err);
  const s = { el: e, dd, queue, pause, rate, maxA, ttl, bot, opens, title, meta, close, loaded: false };
  return s;
}

function setPaused(b, paused) {
  b.dataset.paused = String(paused);
  b.textContent = paused ? 'Resume admission' : 'Pause admission';
}

function update(s, f) {
  const q = f.queue || {};
  s.title.textContent = `${f.title}: ${f.venue}, ${f.city} (${f.hall})`;
  const closed = f.saleClosedAt ? ` Sale closed at ${f.saleClosedAt}.` : '';
  s.meta.textContent = `Show ${f.showId} starts ${f.startsAt}; sale opens ${f.saleStartsAt}.${closed}`;
  s.dd.waiting.textContent = `${num(q.waiting)} waiting`;
  s.dd.active.textContent = `${num(q.active)} active`;
  s.dd.admitted.textContent = `${num(q.admittedTotal)} admitted`;
  s.dd.rate.textContent = `set ${q.admitPerSecond}/s, actual ${Number(q.actualRate || 0).toFixed(1)}/s`;
  s.dd.eta.textContent = q.enabled ? dur(q.lastEtaSeconds) : 'queue off';
  s.dd.available.textContent = `${num(f.available)} available of ${num(f.totalSeats)}`;
  s.dd.held.textContent = `${num(f.held)} held`;
  s.dd.sold.textContent = `${num(f.booked)} sold`;
  s.dd.revenue.textContent = money(f.revenue, f.currency);
  s.dd.conversion.textContent = `${(100 * (f.conversion || 0)).toFixed(1)} %`;
  s.dd.failures.textContent = `${num(f.paymentFailures)} failed`;
  if (document.activeElement !== s.queue && !s.queue.disabled) s.queue.checked = !!q.enabled;
  if (document.activeElement !== s.pause) setPaused(s.pause, !!q.paused);
  s.pause.disabled = !q.enabled;
  s.close.disabled = !!f.saleClosedAt;
  if (f.saleClosedAt) s.close.textContent = 'Sale closed';
  if (!s.loaded) { // the settings forms start from the values in force, then are the operator's to edit
    s.loaded = true;
    s.rate.value = q.admitPerSecond;
    s.maxA.value = q.maxActive;
    s.ttl.value = q.tokenTtlSeconds;
    s.bot.fill(q);
    s.opens.value = (f.saleStartsAt || '').slice(0, 16);
  }
}

async function loadFairness(id, p) {
  try {
    const r = await fetch(`/queue/${encodeURIComponent(id)}/fairness`, { headers: { Accept: 'application/json' } });
    const f = await r.json();
    if (!r.ok) throw new Error(f.detail || `status ${r.status}`);
    const parts = [`Commitment (SHA-256 of the seed): ${f.commitment || 'none yet (the queue has never been on)'}.`];
    parts.push(f.seed ? `Revealed seed: ${f.seed}.` : 'The seed is revealed after the opening draw.');
    p.textContent = parts.join(' ');
  } catch (e) {
    p.textContent = `The fairness record could not be read: ${e.message}`;
  }
}

// ---- fans ----
$('fan-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const out = $('fan-result');
  out.replaceChildren();
  const err = el('p', { class: 'error', role: 'alert' });
  out.append(err);
  try {
    let user = $('fan-user').value.trim();
    let show = $('fan-show').value;
    let bookings;
    const bid = $('fan-booking').value.trim();
    if (bid) {
      const b = await api('GET', `/admin/v1/bookings/${encodeURIComponent(bid)}`);
      user = b.userId;
      show = b.showId;
      bookings = [b];
    } else if (user) {
      bookings = (await api('GET', `/admin/v1/users/${encodeURIComponent(user)}/bookings`)).bookings;
    } else {
      throw new Error('give a user id or a booking id');
    }
    let place;
    try {
      place = await api('GET', `/admin/v1/shows/${encodeURIComponent(show)}/fans/${encodeURIComponent(user)}`);
    } catch (e) {
      if (e.status !== 404) throw e;
    }
    out.append(el('h3', { text: `Fan ${user}` }));
    out.append(el('p', { 'data-c': 'place', text: describePlace(show, place) }));
    if (place && place.status === 'admitted') {
      const kick = el('button', { type: 'button', text: `Kick ${user} (revoke admission)` });
      kick.addEventListener('click', async () => {
        try {
          await api('POST', `/admin/v1/shows/${encodeURIComponent(show)}/fans/${encodeURIComponent(user)}/revoke`);
          kick.replaceWith(el('p', { role: 'status', text: `${user}'s admission is revoked.` }));
          loadAudit();
        } catch (e) { err.textContent = `Kick failed: ${e.message}`; }
      });
      out.append(kick);
    }
    const list = el('ul', { 'data-c': 'bookings' });
    for (const b of bookings) {
      const li = el('li', { text: `${b.bookingId}: ${b.status}, show ${b.showId}, seats ${b.seatIds.join(' ')}, ${money(b.totalAmount, b.currency)} ` });
      if (b.status === 'CONFIRMED') {
        const refund = el('button', { type: 'button', text: `Refund ${b.bookingId}` });
        refund.addEventListener('click', async () => {
          try {
            const r = await api('POST', `/admin/v1/bookings/${encodeURIComponent(b.bookingId)}/refund`);
            refund.replaceWith(`now ${r.status}`);
            loadAudit();
          } catch (e) { err.textContent = `Refund failed: ${e.message}`; }
        });
        li.append(refund);
      }
      list.append(li);
    }
    if (!bookings.length) list.append(el('li', { text: 'No bookings.' }));
    out.append(list);
  } catch (e) {
    err.textContent = `Look-up failed: ${e.message}`;
  }
});

function describePlace(show, p) {
  if (!p) return `Not in the queue of ${show}.`;
  if (p.status === 'admitted') return `Admitted to ${show} until ${p.expiresAt} (token ${p.jti}).`;
  if (p.position) return `${p.status} in the queue of ${show}: position ${p.position}, about ${dur(p.etaSeconds)}.`;
  return `${p.status} in the queue of ${show}.`;
}

// ---- catalog ----
function layout() {
  const rows = Number($('v-rows').value), seats = Number($('v-seats').value);
  const cats = [];
  for (const part of $('v-cats').value.split(',')) {
    const [name, n] = part.split(':').map((x) => x.trim());
    if (name) for (let i = 0; i < Number(n || 1); i++) cats.push(name.toUpperCase());
  }
  const out = [];
  for (let i = 0; i < rows; i++) {
    const label = String.fromCharCode(65 + i);
    out.push({ row: label, seats, category: cats[Math.min(i, cats.length - 1)] || 'STANDARD' });
  }
  return out;
}

function preview() {
  const rows = layout();
  const grid = $('v-preview');
  grid.replaceChildren(el('div', { class: 'stage', text: 'stage' }));
  const counts = {};
  for (const r of rows) {
    const line = el('div', { class: 'row' }, el('span', { class: 'label', text: r.row }));
    for (let n = 1; n <= Math.min(r.seats, 100); n++) line.append(el('span', { class: `seat cat-${r.category.length % 4}`, title: `${r.row}${n} ${r.category}` }));
    grid.append(line);
    counts[r.category] = (counts[r.category] || 0) + r.seats;
  }
  $('v-summary').textContent = `${rows.length} rows; ` + Object.entries(counts).map(([c, n]) => `${n} ${c}`).join(', ') + ' seats.';
}
for (const id of ['v-rows', 'v-seats', 'v-cats']) $(id).addEventListener('input', preview);
preview();

async function create(what, path, body, done) {
  $('catalog-result').textContent = '';
  try {
    const r = await api('POST', path, body);
    $('catalog-result').textContent = done(r);
  } catch (e) {
    $('catalog-result').textContent = `${what} failed: ${e.message}`;
  }
}

$('venue-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  create('Creating the venue', '/admin/v1/venues', { name: $('v-name').value, city: $('v-city').value, halls: [{ name: $('v-hall').value, rows: layout() }] },
    (r) => { $('s-hall').value = r.halls[0].hallId; return `Venue ${r.venueId} created; hall ${r.halls[0].hallId} has ${r.halls[0].seats} seats.`; });
});
$('event-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  create('Creating the event', '/admin/v1/events', { title: $('e-title').value, kind: $('e-kind').value, genre: $('e-genre').value, language: $('e-lang').value, durationMinutes: Number($('e-dur').value) },
    (r) => { $('s-event').value = r.eventId; return `Event ${r.eventId} created.`; });
});
$('show-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const prices = {};
  for (const part of $('s-prices').value.split(',')) {
    const [c, p] = part.split(':').map((x) => x.trim());
    if (c) prices[c.toUpperCase()] = Number(p);
  }
  create('Creating the show', '/admin/v1/shows', { eventId: $('s-event').value, hallId: $('s-hall').value, startsAt: utc($('s-starts').value), saleStartsAt: utc($('s-sale').value), currency: $('s-cur').value, prices },
    (r) => `Show ${r.showId} created; it appears under Shows within a second.`);
});

// ---- audit ----
async function loadAudit() {
  try {
    const r = await api('GET', '/admin/v1/audit?limit=50');
    $('audit').replaceChildren(...r.entries.map((e) => el('li', { text: `${e.at} ${e.actor}: ${e.action}${e.showId ? ` on ${e.showId}` : ''}: ${JSON.stringify(e.old ?? null)} → ${JSON.stringify(e.new ?? null)}` })));
  } catch (e) {
    $('audit').replaceChildren(el('li', { text: `The changes could not be read: ${e.message}` }));
  }
}
$('audit-refresh').addEventListener('click', loadAudit);

// ---- webhooks: endpoints per show or for all, their deliveries, replay, secret roll ----
async function loadHooks() {
  try {
    const r = await api('GET', '/admin/v1/webhooks');
    $('hooks').replaceChildren(...r.webhooks.map((h) => el('li', {}, `${h.url} (${h.showId || 'every show'}) `,
      el('button', { type: 'button', text: 'Deliveries', 'aria-label': `Deliveries to ${h.url}`, onclick: () => loadDeliveries(h) }), ' ',
      el('button', { type: 'button', text: 'Roll secret', 'aria-label': `Roll the secret of the webhook to ${h.url}`, onclick: () => hookAct(async () => {
        const r = await api('POST', `/admin/v1/webhooks/${encodeURIComponent(h.id)}/roll-secret`, { graceSeconds: 86400 });
        $('hook-result').textContent = `New signing secret, shown this once: ${r.secret}. ` +
          `The old one also signs until ${r.previousSecretExpiresAt}.`;
      }) }), ' ',
      el('button', { type: 'button', text: 'Delete', 'aria-label': `Delete the webhook to ${h.url}`, onclick: () => hookAct(async () => {
        await api('DELETE', `/admin/v1/webhooks/${encodeURIComponent(h.id)}`);
        $('deliveries-h').hidden = true;
        $('deliveries').replaceChildren();
      }) }))));
  } catch (e) {
    $('hook-error').textContent = `The webhooks could not be read: ${e.message}`;
  }
}

async function hookAct(f) {
  $('hook-error').textContent = '';
  try { await f(); } catch (e) { $('hook-error').textContent = e.message; }
  await loadHooks();
}

async function loadDeliveries(h) {
  $('hook-error').textContent = '';
  try {
    const r = await api('GET', `/admin/v1/webhooks/${encodeURIComponent(h.id)}/deliveries?limit=20`);
    $('deliveries-h').textContent = `Deliveries to ${h.url}`;
    $('deliveries-h').hidden = false;
    $('deliveries').replaceChildren(...r.deliveries.map((d) => el('li', {},
      `${d.createdAt} ${d.eventType} (${d.eventId}): ${d.status} after ${d.attempts} attempt(s)` +
      `${d.lastStatus ? `, last answer ${d.lastStatus}` : ''}${d.lastError ? `: ${d.lastError}` : ''} `,
      el('button', { type: 'button', text: 'Replay', 'aria-label': `Replay ${d.eventType} ${d.eventId}`, onclick: async () => {
        try {
          await api('POST', `/admin/v1/webhooks/${encodeURIComponent(h.id)}/deliveries/${encodeURIComponent(d.id)}/replay`);
          $('hook-result').textContent = `Replaying ${d.eventType} ${d.eventId}.`;
        } catch (e) { $('hook-error').textContent = e.message; }
        loadDeliveries(h);
      } }))));
  } catch (e) {
    $('hook-error').textContent = `The deliveries could not be read: ${e.message}`;
  }
}

$('hook-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const body = { url: $('hook-url').value };
  if ($('hook-show').value.trim()) body.showId = $('hook-show').value.trim();
  hookAct(async () => {
    const r = await api('POST', '/admin/v1/webhooks', body);
    $('hook-result').textContent = `Registered. Its signing secret, shown this once: ${r.secret}`;
    $('hook-form').reset();
  });
});

// ---- start ----
api('GET', '/admin/session').then(signedIn, () => signedOut(''));
