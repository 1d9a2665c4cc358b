// Audit log: every write with who, what, when and why; filters by actor,
// person (sub, email or name), team (access policy or group that granted
// it), action, target kind and name, and time range; newest first, paged.

import { api } from './api.js';
import { h, replace, fmtTime } from './dom.js';

const filters = { actor: '', person: '', team: '', action: '', targetKind: '', target: '', since: '', until: '' };

export async function renderAudit(main) {
  const input = (key, label, attrs = {}) => {
    const el = h('input', { id: `audit-${key}`, value: filters[key], ...attrs });
    return h('label', { class: 'field' }, h('span', {}, label), el);
  };
  const kind = h('select', { id: 'audit-targetKind' },
    ...['', 'gate', 'override', 'cluster', 'api_token', 'access_policy', 'session', 'identity'].map((v) => h('option', { value: v }, v || 'any')));
  kind.value = filters.targetKind;
  const form = h('form', { class: 'toolbar audit-filters', id: 'audit-filters' },
    input('actor', 'Actor', { placeholder: 'token name' }),
    input('person', 'Person', { placeholder: 'email or sub' }),
    input('team', 'Team', { placeholder: 'policy or group' }),
    input('action', 'Action', { placeholder: 'e.g. override.open' }),
    h('label', { class: 'field' }, h('span', {}, 'Target kind'), kind),
    input('target', 'Target', { placeholder: 'gate / cluster name' }),
    input('since', 'Since', { type: 'datetime-local' }),
    input('until', 'Until', { type: 'datetime-local' }),
    h('button', { type: 'submit', class: 'primary' }, 'Apply'),
    h('button', { type: 'button', id: 'audit-clear' }, 'Clear'));
  const list = h('div', { id: 'audit-list' });
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Audit log')), form, list);

  let shown = 1;
  async function load() {
    for (const k of Object.keys(filters)) filters[k] = form.querySelector(`#audit-${k}`).value;
    const query = {
      actor: filters.actor, person: filters.person, team: filters.team, action: filters.action, targetKind: filters.targetKind, target: filters.target,
      since: filters.since ? new Date(filters.since).toISOString() : '',
      until: filters.until ? new Date(filters.until).toISOString() : '',
    };
    // Live refreshes keep the pages the user has already loaded.
    const items = [];
    let cursor;
    for (let i = 0; i < shown; i++) {
      const page = await api('/api/v1/audit', { query: { ...query, limit: 50, cursor } });
      items.push(...page.items);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    draw(list, items, cursor, () => { shown++; load(); });
  }
  form.addEventListener('submit', (ev) => { ev.preventDefault(); shown = 1; load().catch(showErr); });
  form.querySelector('#audit-clear').addEventListener('click', () => {
    for (const el of form.querySelectorAll('input, select')) el.value = '';
    shown = 1;
    load().catch(showErr);
  });
  const showErr = (e) => replace(list, h('p', { class: 'form-error' }, `${e.field ? `${e.field}: ` : ''}${e.message}`));
  await load();
  return { refresh: load };
}

function draw(list, items, more, loadMore) {
  if (!items.length) {
    replace(list, h('p', { class: 'empty' }, 'No entries match.'));
    return;
  }
  replace(list, h('table', { class: 'plain audit', id: 'audit-table' },
    h('thead', {}, h('tr', {}, ...['When', 'Actor', 'Action', 'Target', 'Reason', 'Change'].map((t) => h('th', {}, t)))),
    h('tbody', {}, ...items.map((e) => h('tr', { 'data-audit': e.id, 'data-action': e.action, 'data-subject': e.actorSubject || '' },
      h('td', { class: 'nowrap', title: e.at }, fmtTime(e.at, undefined, true)),
      // The person (sub@issuer on hover) and what granted the action.
      h('td', { title: e.actorSubject ? `${e.actorSubject}@${e.actorIssuer || ''}` : '' }, e.actor,
        e.grantedBy && e.grantedBy.length ? h('div', { class: 'muted granted-by' }, e.grantedBy.join(', ')) : null),
      h('td', {}, h('code', {}, e.action)),
      h('td', {}, `${e.targetKind} `, h('strong', {}, e.targetName)),
      h('td', { class: 'reason' }, e.reason || ''),
      h('td', {}, (e.before || e.after) ? h('details', {}, h('summary', {}, 'show'),
        h('pre', {}, JSON.stringify({ before: e.before, after: e.after }, null, 2))) : '')))),
  ), more ? h('button', { type: 'button', id: 'audit-more', onclick: loadMore }, 'Load more') : null);
}
