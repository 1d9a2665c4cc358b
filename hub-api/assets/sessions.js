// Sessions page: a signed-in person sees their own dashboard sessions (device,
// signed in, last used, expiry) and ends the ones they do not recognise, or
// every other one; an admin also lists everyone's sessions (or one person's)
// and ends one session or all of a person's.

import { api } from './api.js';
import { h, replace, fmtTime, relTime, badge, toast } from './dom.js';

let person = '';

export async function renderSessions(main, ctx) {
  const isPerson = !!(ctx.me.identity && ctx.me.identity.kind === 'person');
  const isAdmin = ctx.me.role === 'admin';
  const mine = h('section', { class: 'card', id: 'my-sessions' });
  const all = h('section', { class: 'card', id: 'all-sessions' });
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Sessions')),
    isPerson ? mine : h('p', { class: 'muted' }, 'You signed in with an API token: it has no sessions.'),
    isAdmin ? all : null);
  const err = (e) => toast(`${e.field ? `${e.field}: ` : ''}${e.message}`, 'bad');

  async function end(body, what, admin) {
    try {
      const r = await api(admin ? '/api/v1/sessions/end' : '/api/v1/auth/sessions/end', { method: 'POST', body });
      toast(`${r.ended} session(s) ended${what ? ` (${what})` : ''}`, 'good');
      await refresh();
    } catch (e) { err(e); }
  }

  async function drawMine() {
    const list = await api('/api/v1/auth/sessions');
    const others = list.items.filter((s) => !s.current).length;
    replace(mine, h('h2', {}, 'Your sessions'),
      h('p', { class: 'muted' }, 'Every browser where you are signed in. End a session you do not recognise: its next request needs a new sign-in.'),
      table(list.items, false, (s) => (s.current
        ? badge('open', 'this session')
        : h('button', { type: 'button', class: 'end-session', onclick: () => end({ id: s.id }, 'yours', false) }, 'End'))),
      h('p', {}, h('button', {
        type: 'button', id: 'end-other-sessions', class: 'danger', disabled: others === 0,
        onclick: () => end({ keepCurrent: true }, 'everywhere else', false),
      }, 'End all other sessions')));
  }

  // The filter stays while live events redraw the list under it.
  const input = h('input', { id: 'sessions-person', value: person, placeholder: 'subject or email; empty: everyone' });
  const form = h('form', { class: 'toolbar', id: 'sessions-filter' },
    h('label', { class: 'field' }, h('span', {}, 'Person'), input),
    h('button', { type: 'submit', class: 'primary' }, 'Show'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    person = input.value.trim();
    drawAll().catch(err);
  });
  const allList = h('div', { id: 'all-sessions-list' });
  replace(all, h('h2', {}, 'Everyone\'s sessions (admin)'), form, allList);

  async function drawAll() {
    const list = await api('/api/v1/sessions', { query: { subject: person } });
    const endAll = person && list.items.length
      ? h('p', {}, h('button', {
        type: 'button', id: 'end-person-sessions', class: 'danger',
        onclick: () => end({ subject: person, reason: 'ended by an admin in the dashboard' }, person, true),
      }, `End all sessions of ${person}`))
      : null;
    replace(allList,
      table(list.items, true, (s) => (s.current ? badge('open', 'this session')
        : h('button', { type: 'button', class: 'end-session', onclick: () => end({ id: s.id, reason: 'ended by an admin in the dashboard' }, s.identity.name, true) }, 'End'))),
      endAll);
  }

  async function refresh() {
    if (isPerson) await drawMine();
    if (isAdmin) await drawAll();
  }

  await refresh();
  return { refresh };
}

function table(items, withPerson, action) {
  if (!items.length) return h('p', { class: 'empty' }, 'No live sessions.');
  const head = [...(withPerson ? ['Person'] : []), 'Device', 'Signed in', 'Last used', 'Expires', ''];
  return h('table', { class: 'plain sessions-table' },
    h('thead', {}, h('tr', {}, ...head.map((t) => h('th', {}, t)))),
    h('tbody', {}, ...items.map((s) => h('tr', { 'data-session': s.id, 'data-current': s.current ? '1' : null },
      withPerson ? h('td', {}, h('strong', {}, s.identity.name), ' ', h('span', { class: 'muted' }, s.identity.email || s.identity.subject)) : null,
      h('td', { class: 'reason' }, device(s.userAgent)),
      h('td', {}, fmtTime(s.createdAt)),
      h('td', {}, s.lastUsedAt ? relTime(s.lastUsedAt) : '—'),
      h('td', {}, fmtTime(s.expiresAt), ' ', h('span', { class: 'muted' }, relTime(s.expiresAt))),
      h('td', { class: 'nowrap' }, action(s))))));
}

/** "Chrome on Linux" from a User-Agent (the whole string in the tooltip). */
function device(ua) {
  if (!ua) return 'unknown device';
  const browser = [['Edg/', 'Edge'], ['Firefox/', 'Firefox'], ['Chrome/', 'Chrome'], ['Safari/', 'Safari']]
    .find(([k]) => ua.includes(k));
  const os = [['Windows', 'Windows'], ['Mac OS X', 'macOS'], ['Android', 'Android'], ['iPhone', 'iOS'], ['Linux', 'Linux']]
    .find(([k]) => ua.includes(k));
  const text = browser || os ? `${browser ? browser[1] : 'A browser'}${os ? ` on ${os[1]}` : ''}` : ua;
  return h('span', { title: ua }, text);
}
