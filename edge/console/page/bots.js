// The Bots panel and a show's bot settings: what the waiting room's guard did for the show selected (challenges
// issued, solved and failed, the median solve time, refusals by reason, places per prefix), read from each round
// of live figures, and the prefixes the operator blocks for it. settingsFields are the bot settings the Shows
// panel's queue form carries.
import { $, el } from "./dom.js";
import { count as num } from "./ui.js";
import { syncShows } from './picker.js';

const solveTime = (ms) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

// What each refusal means, in the operator's words, by reason: the waiting room's table of reasons
// (waitroom/refusal.go), which the console's page carries.
let REASONS = {};
try { REASONS = JSON.parse(document.documentElement.dataset.reasons || "{}") || {}; } catch { REASONS = {}; }

// A prefix an operator can block: an address, or an IPv6 /64 (not the per-identity count of an exempt address).
const blockable = (p) => !p.startsWith('exempt:') && p !== 'unknown';

export function mount({ call, changed }) {
  const select = $('bot-show');
  const dd = {};
  for (const d of document.querySelectorAll('#bot-figs dd[data-f]')) dd[d.dataset.f] = d;
  let last = null; // the selected show's latest figures
  let pending = null; // {show, list, until}: the list a block or unblock answered, until the figures catch up
  const drawn = {}; // what each list shows now, so a round that changes nothing leaves focus and buttons alone

  const draw = (key, node, content, make) => {
    const k = JSON.stringify(content);
    if (drawn[key] === k) return;
    drawn[key] = k;
    node.replaceChildren(...make());
  };

  const show = () => select.value;

  function renderBlocked(list) {
    draw('blocked', $('blocked'), [show(), list], () => (list.length ? list.map((p) => el('li', {}, `${p} `,
      el('button', { type: 'button', text: 'Unblock', 'aria-label': `Unblock ${p}`, onclick: () => unblock(p) }))) :
      [el('li', { text: 'No prefix is blocked for this show.' })]));
  }

  async function change(what, id, call) {
    $('block-error').textContent = '';
    $('block-result').textContent = '';
    try {
      const r = await call();
      const list = r.blockedPrefixes || [];
      pending = { show: id, list, until: Date.now() + 5000 };
      if (show() === id) renderBlocked(list);
      $('block-result').textContent = what;
      changed();
      return true;
    } catch (e) {
      $('block-error').textContent = `That did not work: ${e.message}`;
      return false;
    }
  }

  const block = (prefix) => {
    const id = show();
    return change(`Blocked ${prefix} for ${id}: its clients are suspects from now on.`, id,
      () => call('POST', `/admin/v1/shows/${encodeURIComponent(id)}/blocked-prefixes`, { prefix }));
  };

  async function unblock(prefix) {
    const id = show();
    await change(`Unblocked ${prefix} for ${id}.`, id,
      () => call('DELETE', `/admin/v1/shows/${encodeURIComponent(id)}/blocked-prefixes?prefix=${encodeURIComponent(prefix)}`));
    $('block-prefix').focus(); // the button that had focus is gone
  }

  $('block-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = $('block-prefix');
    if (await block(input.value.trim())) input.value = '';
    else input.focus();
  });
  select.addEventListener('change', () => { if (last) render(last.snap); });

  function render(snap) {
    const shows = snap.shows || [];
    syncShows(select, shows);
    const f = shows.find((s) => s.showId === show());
    last = { snap };
    $('bot-panel').hidden = !f;
    if (!f) return;
    const q = f.queue || {};
    const bp = q.botProtection || {};
    const b = q.bots || {};
    $('bot-state').textContent = !q.enabled ? 'The queue is off: the guard asks nothing of a join.' :
      !bp.enabled ? 'Bot protection is off for this show: joins need no proof of work.' :
        `On: every new place needs a proof of work${bp.humanCheck ? ' and the human check' : ''}` +
        `${bp.accountsOnly ? ', from accounts only' : ''}; at most ${num(bp.prefixPlaces)} places per prefix; ` +
        `suspects are ${bp.suspects === 'shadow' ? 'given a place that never comes up' : 'refused'}.`;
    dd.issued.textContent = `${num(b.challengesIssued)} issued`;
    dd.solved.textContent = `${num(b.challengesSolved)} solved`;
    dd.failed.textContent = `${num(b.challengesFailed)} failed`;
    dd.median.textContent = b.challengesSolved ? solveTime(b.medianSolveMs) : 'none solved yet';
    dd.shadowed.textContent = `${num(b.shadowed)} shadowed`;
    const refused = Object.entries(b.refusedByReason || {}).filter(([, n]) => n > 0).sort((x, y) => y[1] - x[1]);
    draw('refusals', $('bot-refusals'), refused, () => (refused.length ? refused.map(([r, n]) =>
      el('li', { 'data-reason': r, text: `${num(n)} ${REASONS[r] || 'were refused'} (${r})` })) :
      [el('li', { text: 'No join refused yet.' })]));
    const top = b.topPrefixes || [];
    draw('prefixes', $('bot-prefixes').tBodies[0], top, () => (top.length ? top.map((p) => el('tr', {},
      el('th', { scope: 'row', text: p.prefix }), el('td', { text: num(p.places) }),
      el('td', {}, blockable(p.prefix) ? el('button', { type: 'button', text: 'Block', 'aria-label': `Block ${p.prefix}`,
        onclick: () => block(p.prefix) }) : '')))
      : [el('tr', {}, el('td', { colspan: '3', text: 'No place taken yet.' }))]));
    let blocked = (bp.blockedPrefixes || '').split(',').map((p) => p.trim()).filter(Boolean);
    if (pending && pending.show === f.showId) {
      if (JSON.stringify(blocked) === JSON.stringify(pending.list) || Date.now() > pending.until) pending = null;
      else blocked = pending.list; // a round read before the change: keep what the change answered
    }
    renderBlocked(blocked);
  }

  return { render };
}

// settingsFields are the bot settings of show id's queue form: its fields, fill(queue figures) to start from
// the values in force, and body() for the form's PUT. Figures without them (an older edge's) leave the fields
// disabled and out of the PUT, so the form still saves the rest.
export function settingsFields(id) {
  const input = (name, attrs) => el('input', { id: `${name}-${id}`, ...attrs });
  const on = input('bp', { type: 'checkbox', role: 'switch' });
  const base = input('bd', { type: 'number', min: '1', max: '1000000000000', step: '1', required: '' });
  const refuse = input('sr', { type: 'radio', name: `suspects-${id}`, value: 'refuse' });
  const shadow = input('ss', { type: 'radio', name: `suspects-${id}`, value: 'shadow' });
  const human = input('hc', { type: 'checkbox' });
  const accounts = input('ao', { type: 'checkbox' });
  const places = input('pp', { type: 'number', min: '1', step: '1', required: '' });
  const hold = input('th', { type: 'number', min: '0', max: '1440', step: 'any', required: '' });
  const check = (box, text) => el('p', { class: 'check' }, box, el('label', { for: box.id, text }));
  const group = el('fieldset', { class: 'bot', disabled: '' }, el('legend', { text: 'Bot protection' }),
    check(on, 'Bot protection on: a proof of work for every new place'),
    el('label', { for: base.id, text: 'Base difficulty (hashes at most, for a prefix\'s first challenges)' }), base,
    el('fieldset', {}, el('legend', { text: 'Suspected bots are' }),
      check(refuse, 'refused'), check(shadow, 'given a place that never comes up (shadowed)')),
    check(human, 'Ask for the human check too (when the edge has one)'),
    check(accounts, 'Accounts only: no guest identities'),
    el('label', { for: places.id, text: 'Places per prefix (an IPv4 address or an IPv6 /64)' }), places);
  const holdLabel = el('label', { for: hold.id, text: 'Turn hold (minutes a fan away when their turn came keeps it)' });
  hold.disabled = true;
  return {
    fields: [group, holdLabel, hold],
    fill(q) {
      const bp = q.botProtection;
      if (bp) {
        group.disabled = false;
        on.checked = !!bp.enabled;
        base.value = bp.baseDifficulty;
        (bp.suspects === 'shadow' ? shadow : refuse).checked = true;
        human.checked = !!bp.humanCheck;
        accounts.checked = !!bp.accountsOnly;
        places.value = bp.prefixPlaces;
      }
      if (q.turnHoldSeconds !== undefined) {
        hold.disabled = false;
        hold.value = q.turnHoldSeconds / 60;
      }
    },
    body() {
      const out = {};
      if (!hold.disabled) out.turnHoldSeconds = Math.round(Number(hold.value) * 60);
      if (!group.disabled) {
        out.botProtection = {
          enabled: on.checked, baseDifficulty: Number(base.value), suspects: shadow.checked ? 'shadow' : 'refuse',
          humanCheck: human.checked, accountsOnly: accounts.checked, prefixPlaces: Number(places.value),
        };
      }
      return out;
    },
  };
}
