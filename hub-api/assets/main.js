// Boot and routing: sign-in (identity provider session or API token), then hash routes
// (#/fleet, #/gates/NAME, #/clusters/NAME, #/approvals, #/audit, #/webhooks and #/preview[/NAME] for admins, #/sessions). Live events make the
// current page re-fetch its data (debounced), so every page stays current.

import { api, setToken, setCsrf, token, ApiError } from './api.js';
import { h, replace, toast } from './dom.js';
import { startLive } from './live.js';
import { renderFleet } from './fleet.js';
import { renderGate } from './gate.js';
import { renderCluster } from './cluster.js';
import { renderAudit } from './audit.js';
import { renderWebhooks } from './webhooks.js';
import { renderFreeze } from './freeze.js';
import { renderApprovals, setPendingCount } from './approvals.js';
import { renderSessions } from './sessions.js';
import { renderPreview } from './preview.js';

const main = document.getElementById('main');
// Script errors are kept where the browser tests can read them.
window.fleetgateErrors = [];
window.addEventListener('error', (e) => window.fleetgateErrors.push(String(e.message)));
window.addEventListener('unhandledrejection', (e) => window.fleetgateErrors.push(String(e.reason)));
const app = { me: null, page: null, stopLive: null, timer: null, queued: [], seq: 0 };

function route() {
  const parts = (location.hash.replace(/^#\/?/, '') || 'fleet').split('/').map(decodeURIComponent);
  switch (parts[0]) {
    case 'gates': return { name: 'gate', render: renderGate, arg: parts[1] };
    case 'clusters': return { name: 'cluster', render: renderCluster, arg: parts[1] };
    case 'audit': return { name: 'audit', render: renderAudit };
    case 'webhooks': return { name: 'webhooks', render: renderWebhooks };
    case 'approvals': return { name: 'approvals', render: renderApprovals };
    case 'sessions': return { name: 'sessions', render: renderSessions };
    case 'preview': return { name: 'preview', render: renderPreview, arg: parts[1] };
    default: return { name: 'fleet', render: renderFleet };
  }
}

/** Renders the page of the current hash. */
async function show() {
  if (!app.me) return;
  const r = route();
  const seq = ++app.seq;
  document.body.dataset.page = r.name;
  main.dataset.ready = '';
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('current', a.dataset.nav === r.name || (!['audit', 'webhooks', 'approvals', 'sessions', 'preview'].includes(r.name) && a.dataset.nav === 'fleet'));
  }
  const ctx = { me: app.me, canAct: app.me.role !== 'viewer', refresh: () => refreshNow() };
  // Each navigation renders into its own element: a refresh of the previous
  // page still in flight (a live event just before the click) then draws into
  // a detached element instead of over this page.
  const view = h('div', { class: 'view' });
  replace(main, view);
  freezeBanner(ctx);
  try {
    const page = await r.render(view, ctx, r.arg);
    if (seq !== app.seq) return; // navigated away meanwhile
    app.page = page;
    main.dataset.ready = '1';
  } catch (e) {
    if (seq !== app.seq) return;
    app.page = null;
    showError(e);
  }
}

function showError(e) {
  const msg = e instanceof ApiError ? `${e.message}${e.field ? ` (${e.field})` : ''}` : String(e.message || e);
  replace(main, h('section', { class: 'card error-card' }, h('h2', {}, 'Could not load this page'), h('p', {}, msg),
    h('p', {}, h('a', { href: '#/fleet' }, 'Back to the fleet'))));
  main.dataset.ready = '1';
}

/** The freeze banner of every page (its errors are not the page's). */
function freezeBanner(ctx) {
  renderFreeze(ctx || { me: app.me, canAct: app.me && app.me.role !== 'viewer', refresh: () => refreshNow() })
    .catch((e) => { if (!(e instanceof ApiError && e.status === 401)) toast(`Freeze banner: ${e.message}`, 'bad'); });
}

/** The number of pending approvals beside "Approvals" in the navigation. */
function pendingCount() {
  api('/api/v1/approvals', { query: { status: 'pending' } })
    .then((p) => setPendingCount(p.items.length))
    .catch(() => {});
}

/** Re-fetches the current page's data now. */
async function refreshNow() {
  clearTimeout(app.timer);
  app.timer = null;
  if (app.me) { freezeBanner(); pendingCount(); }
  if (!app.page || !app.page.refresh) return show();
  try {
    await app.page.refresh();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) toast(`Refresh failed: ${e.message}`, 'bad');
  }
}

/** Collects live events for a moment, then refreshes once and tells what changed. */
function onLiveEvent(name, data) {
  app.queued.push({ name, data });
  if (app.timer) return;
  app.timer = setTimeout(() => {
    const events = app.queued;
    app.queued = [];
    summarize(events);
    refreshNow();
  }, 250);
}

function summarize(events) {
  const gates = events.filter((e) => e.name === 'gate');
  const overrides = events.filter((e) => e.name === 'override');
  const spokes = events.filter((e) => e.name === 'spoke');
  const rollouts = events.filter((e) => e.name === 'rollout');
  for (const a of events.filter((e) => e.name === 'approval').slice(0, 2)) {
    const d = a.data;
    const what = `${d.state === 'open' ? 'open' : 'close'} gate ${d.gate}`;
    toast(d.change === 'pending' ? `${d.requester} asks to ${what}: ${d.reason} (${d.approvals} of ${d.required} approvals)`
      : `Request to ${what} ${d.change}${d.decidedBy ? ` by ${d.decidedBy}` : ''}`, d.change === 'approved' ? 'good' : 'info');
  }
  for (const p of events.filter((e) => e.name === 'reportProblems' && (e.data.total > e.data.previous || e.data.writeError)).slice(0, 2)) {
    const d = p.data;
    toast(d.writeError
      ? `The hub could not store ${d.cluster}'s report: ${d.writeError}`
      : `${d.cluster}'s report had ${d.total} object(s) with text stored repaired (see the cluster page)`, 'bad');
  }
  for (const c of events.filter((e) => e.name === 'calendarFeed' && (e.data.contentChanged || e.data.state === 'stale')).slice(0, 2)) {
    const d = c.data;
    toast(d.state === 'stale'
      ? `Calendar feed of gate ${d.gate} (window ${d.window}) is stale: its onStale applies`
      : `Calendar feed of gate ${d.gate} (window ${d.window}) changed: ${d.occurrences} occurrence(s)`, d.state === 'stale' ? 'bad' : 'info');
  }
  for (const sn of events.filter((e) => e.name === 'snapshotState').slice(0, 2)) {
    const d = sn.data;
    const p = d.persistence || {};
    if (d.overBudget && !d.wasOverBudget) {
      toast(`${d.cluster}'s snapshot is over its budget (${d.overBudget.bytes} of ${d.overBudget.budget} bytes): the hub holds it closed`, 'bad');
    } else if (!d.overBudget && d.wasOverBudget) {
      toast(`${d.cluster}'s snapshot fits its budget again`, 'good');
    } else if (p.state === 'failing') {
      toast(`${d.cluster}'s spoke cannot persist its snapshot: ${p.error || 'no reason given'}`, 'bad');
    } else if (p.state === 'persisted' && d.previousPersistenceState === 'failing') {
      toast(`${d.cluster}'s spoke persists its snapshot again`, 'good');
    }
  }
  for (const o of overrides.slice(0, 2)) {
    const d = o.data;
    toast(d.change === 'active'
      ? `${d.actor} ${d.state === 'open' ? 'opened' : 'closed'} gate ${d.gate}: ${d.reason}`
      : `Override on gate ${d.gate} ended`, d.state === 'open' ? 'good' : 'info');
  }
  if (gates.length) {
    const to = gates[0].data.to || 'removed';
    const more = gates.length > 1 ? ` and ${gates.length - 1} more` : '';
    toast(`Gate ${gates[0].data.gate} on ${gates[0].data.cluster} is now ${to}${more}`, to === 'open' ? 'good' : 'info');
  }
  for (const r of rollouts.slice(-2)) {
    const d = r.data;
    const bad = d.action === 'halted' || d.action === 'aborted';
    toast(`Rollout of gate ${d.gate} ${d.action}: wave ${d.wave} of ${d.waves}, ${d.released} of ${d.clusters} clusters released`, bad ? 'bad' : 'info');
  }
  for (const sp of spokes.slice(0, 2)) {
    toast(`Spoke of ${sp.data.cluster} ${sp.data.connected ? 'connected' : 'disconnected'}`, sp.data.connected ? 'good' : 'bad');
  }
}

function setLive(text, state) {
  const el = document.getElementById('live');
  el.hidden = false;
  el.className = `live ${state}`;
  el.dataset.state = state;
  replace(el, h('span', { class: 'dot', 'aria-hidden': 'true' }), ' ', text);
}

function signOut(message) {
  if (app.stopLive) app.stopLive();
  app.stopLive = null;
  app.me = null;
  app.page = null;
  setToken(null);
  setCsrf(null);
  for (const id of ['nav', 'me', 'signout', 'live', 'freeze', 'freeze-banner']) document.getElementById(id).hidden = true;
  renderSignIn(message);
}

function renderSignIn(message) {
  document.body.dataset.page = 'signin';
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'fga_…' });
  const err = h('p', { class: 'form-error', id: 'signin-error', role: 'alert' }, message || '');
  const sso = h('div', { class: 'sso', id: 'sso' });
  const form = h('form', { class: 'card signin', id: 'signin' },
    h('h1', {}, 'Sign in to fleetgate'), sso, err,
    h('p', { class: 'muted' }, 'Or paste an API token. It is kept in this browser tab only (session storage) and sent in the Authorization header.'),
    h('label', { for: 'token' }, 'API token'), input,
    h('button', { type: 'submit', class: 'primary', id: 'signin-submit' }, 'Sign in with token'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    setToken(input.value.trim());
    try {
      await start();
    } catch (e) {
      setToken(null);
      err.textContent = e instanceof ApiError && e.status === 401 ? 'That token was not accepted.' : `Sign-in failed: ${e.message}`;
    }
  });
  replace(main, form);
  // "Sign in with <provider>" when the hub has one.
  api('/api/v1/auth/config').then((cfg) => {
    if (!cfg || !cfg.enabled) { main.dataset.ready = '1'; return; }
    const button = h('button', { type: 'button', class: 'primary', id: 'sso-signin' }, `Sign in with ${cfg.provider}`);
    button.addEventListener('click', async () => {
      button.disabled = true;
      try {
        const go = await api('/api/v1/auth/login', { method: 'POST', body: { returnTo: `/${location.hash}` } });
        location.assign(go.url);
      } catch (e) {
        button.disabled = false;
        err.textContent = e.message;
      }
    });
    replace(sso, button);
    main.dataset.ready = '1';
  }).catch(() => { main.dataset.ready = '1'; });
}

async function start() {
  app.me = await api('/api/v1/whoami');
  setCsrf(app.me.csrfToken);
  const me = document.getElementById('me');
  replace(me, h('span', { class: 'who' }, app.me.name), ' ', h('span', { class: `role role-${app.me.role}` }, app.me.role));
  me.dataset.role = app.me.role;
  for (const id of ['nav', 'me', 'signout']) document.getElementById(id).hidden = false;
  document.getElementById('nav-webhooks').hidden = app.me.role !== 'admin';
  document.getElementById('nav-preview').hidden = app.me.role !== 'admin';
  // A person has sessions; an admin manages everyone's.
  document.getElementById('nav-sessions').hidden = app.me.role !== 'admin' && !(app.me.identity && app.me.identity.kind === 'person');
  if (app.stopLive) app.stopLive();
  app.stopLive = startLive({
    onEvent: onLiveEvent,
    // Subscribed: state fetched from now on misses no change. After a
    // reconnect the hub may have restarted, so fetch everything again.
    onReady: () => refreshNow(),
    onStatus: setLive,
    onUnauthenticated: () => signOut('Your token is no longer valid. Sign in again.'),
  });
  pendingCount();
  await show();
}

window.addEventListener('hashchange', show);
window.addEventListener('fleetgate:unauthenticated', () => { if (app.me) signOut(token() ? 'Your token is no longer valid. Sign in again.' : 'Your session has ended. Sign in again.'); });
document.getElementById('signout').addEventListener('click', async () => {
  // A session ends at the hub too (an API token just leaves this tab).
  if (!token() && app.me) {
    try { await api('/api/v1/auth/logout', { method: 'POST' }); } catch (e) { /* signed out anyway */ }
  }
  signOut();
});

// A failed provider sign-in comes back as ?signin_error=...
const signinError = new URLSearchParams(location.search).get('signin_error');
if (signinError) history.replaceState(null, '', `/${location.hash}`);
if (token()) start().catch(() => signOut('Your token is no longer valid. Sign in again.'));
// Without a token, a session cookie may be there (HttpOnly: only the hub can tell). Ask
// whoami only then: a visitor who never signed in is normal, not a refused request.
else if (signinError) renderSignIn(signinError);
else {
  api('/api/v1/auth/config')
    .then((cfg) => (cfg && cfg.sessionCookie ? start() : Promise.reject(new Error('signed out'))))
    .catch(() => signOut());
}
