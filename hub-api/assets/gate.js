// Gate page: what the gate is (manifest, rules in words), what it will do
// (7-day timeline in its zone and the viewer's), its calendar feeds (status,
// a warning while one is stale), what people did (live overrides, with
// cancel), its rollout (rollout.js) and where it applies (clusters in scope).

import { api, enc } from './api.js';
import { h, replace, fmtTime, relTime, badge, toYaml, viewerZone } from './dom.js';
import { timeline } from './timeline.js';
import { gateActions, cancelAction } from './actions.js';
import { rolloutCard } from './rollout.js';

export async function renderGate(main, ctx, name) {
  async function refresh() {
    // The page's one request carries the rollout (absent when the gate has none).
    const d = await api(`/api/v1/dashboard/gates/${enc(name)}`);
    draw(main, ctx, d, d.rollout || null, refresh);
  }
  await refresh();
  return { refresh };
}

function draw(main, ctx, d, rollout, refresh) {
  const spec = d.gate.manifest.spec || {};
  const open = d.clusters.filter((c) => c.state === 'open').length;
  const closed = d.clusters.length - open;
  const from = new Date();
  const to = new Date(from.getTime() + 7 * 86400000);
  const clusters = [...d.clusters].sort((a, b) => a.state.localeCompare(b.state) || a.name.localeCompare(b.name));

  replace(main,
    h('div', { class: 'page-head' },
      h('h1', {}, h('span', { class: 'kind' }, 'Gate '), d.gate.name),
      h('span', { class: 'muted' }, `version ${d.gate.version}`),
      h('span', { class: 'spacer' }),
      ctx.me.role === 'admin' ? h('a', { class: 'button', id: 'preview-change', href: `#/preview/${enc(d.gate.name)}` }, 'Preview a change…') : null,
      gateActions(d.gate.name, ctx, { count: d.clusters.length, after: refresh, may: d.mayOperate })),
    spec.description ? h('p', { class: 'lead' }, spec.description) : null,
    staleWarning(d.gate.calendars || []),
    h('div', { class: 'counts' },
      h('div', { class: 'count open' }, h('span', { class: 'n', id: 'gate-open' }, open), h('span', { class: 'label' }, '✓ open')),
      h('div', { class: 'count closed' }, h('span', { class: 'n', id: 'gate-closed' }, closed), h('span', { class: 'label' }, '✕ closed')),
      h('div', { class: 'count total' }, h('span', { class: 'n' }, spec.mode || 'suspend'), h('span', { class: 'label' }, 'mode')),
      h('div', { class: `count total${spec.enforcement === 'warn' ? ' would' : ''}` }, h('span', { class: 'n', id: 'gate-enforcement' }, spec.enforcement || 'enforce'), h('span', { class: 'label' }, spec.enforcement === 'warn' ? '◌ warn: holds nothing' : 'enforcement')),
      h('div', { class: 'count total' }, h('span', { class: 'n' }, spec.default || 'open'), h('span', { class: 'label' }, 'default')),
      h('div', { class: 'count total' }, h('span', { class: 'n small-n' }, d.timeZone), h('span', { class: 'label' }, 'time zone'))),
    rolloutCard(rollout, ctx, refresh),
    h('section', { class: 'card' },
      h('h2', {}, 'Next 7 days'),
      h('p', { class: 'muted' }, `Schedule without overrides, ticks at midnight in the gate's zone (${d.timeZone}, top) and yours (${viewerZone}, bottom). Hover a band for details.`),
      timeline({ preview: d.preview, overrides: d.overrides, gateZone: d.timeZone, from, to }),
      transitions(d)),
    h('section', { class: 'card' },
      h('h2', {}, 'Rules'),
      h('ol', { class: 'rules' },
        h('li', {}, 'An active manual override for the cluster wins (the newest one).'),
        ...d.rules.map((r) => h('li', {}, r))),
      h('p', { class: 'muted' }, 'An active deny window closes the gate even while an allow window is active.')),
    feedsCard(d.gate.calendars || []),
    h('section', { class: 'card', id: 'overrides' },
      h('h2', {}, `Live overrides (${d.overrides.length})`),
      d.overrides.length ? overridesTable(d.overrides, ctx, refresh, () => d.mayOperate) : h('p', { class: 'muted' }, 'None — the schedule decides.')),
    h('section', { class: 'card' },
      h('h2', {}, `Clusters in scope (${d.clusters.length})`),
      clusters.length ? clustersTable(clusters) : h('p', { class: 'muted' }, 'No registered cluster matches the gate\'s cluster selector.')),
    h('section', { class: 'card' },
      h('details', {}, h('summary', {}, 'Manifest'), h('pre', { class: 'manifest' }, toYaml(d.gate.manifest).trimStart()))));
}

// A stale calendar feed applies its window's onStale: say so above everything.
function staleWarning(feeds) {
  const stale = feeds.filter((f) => f.state === 'stale');
  if (!stale.length) return null;
  return h('section', { class: 'card error-card', id: 'calendar-stale' },
    h('p', { class: 'warn' }, `Calendar feed stale: ${stale.map((f) => `window ${f.window}`).join(', ')}. `,
      'No successful fetch for maxStale; the window applies onStale (keep: the last good copy; closed: the gate is closed).'));
}

// Each calendar.url window's feed as the hub last fetched it.
function feedsCard(feeds) {
  if (!feeds.length) return null;
  const when = (t) => (t ? [fmtTime(t), ' ', h('span', { class: 'muted' }, relTime(t))] : 'never');
  const states = { stale: ['closed', 'stale'], failing: ['held', 'failing'], ok: ['open', 'ok'], notFetched: ['waiting', 'not fetched yet'] };
  const state = (f) => badge(...(states[f.state] || states.notFetched));
  return h('section', { class: 'card', id: 'calendar-feeds' },
    h('h2', {}, `Calendar feeds (${feeds.length})`),
    h('table', { class: 'plain' },
      h('thead', {}, h('tr', {}, ...['Window', 'Feed', 'State', 'Last fetch', 'Last change', 'Error', 'Occurrences'].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...feeds.map((f) => h('tr', { 'data-feed': f.window },
        h('td', {}, f.window), h('td', { class: 'reason' }, f.url), h('td', {}, state(f)),
        h('td', {}, when(f.lastFetchAt)), h('td', {}, when(f.lastChangeAt)),
        h('td', { class: 'reason' }, f.error ? `${f.error} (${f.failures} failed)` : '—',
          ...(f.rejected || []).map((r) => h('div', { class: 'muted' }, `skipped: ${r}`))),
        h('td', {}, String(f.occurrences)))))));
}

function transitions(d) {
  const list = d.preview.transitions.slice(0, 8);
  if (!list.length) return h('p', {}, `No change in the next 7 days — ${d.preview.initial.state}: ${d.preview.initial.reason}.`);
  return h('table', { class: 'plain' },
    h('thead', {}, h('tr', {}, h('th', {}, `When (${d.timeZone})`), h('th', {}, `When (you, ${viewerZone})`), h('th', {}, 'Becomes'), h('th', {}, 'Why'))),
    h('tbody', {}, ...list.map((t) => h('tr', {},
      h('td', {}, fmtTime(t.at, d.timeZone)), h('td', {}, fmtTime(t.at), ' ', h('span', { class: 'muted' }, relTime(t.at))),
      h('td', {}, badge(t.state, t.state)), h('td', {}, t.reason)))));
}

export function scopeText(o) {
  const c = o.clusters;
  if (!c) return 'whole scope';
  const parts = [];
  if (c.names && c.names.length) parts.push(c.names.join(', '));
  if (c.selector) parts.push(`selector ${JSON.stringify(c.selector)}`);
  return parts.join(' + ');
}

/** `may(o)`: whether the hub lets the caller cancel override `o` (its role and scope). */
export function overridesTable(list, ctx, refresh, may = () => true) {
  return h('table', { class: 'plain', id: 'overrides-table' },
    h('thead', {}, h('tr', {}, ...['State', 'Gate', 'Clusters', 'From', 'Until', 'By', 'Reason', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, ...list.map((o) => h('tr', { 'data-override': o.id },
      h('td', {}, badge(o.state, o.state)), h('td', {}, h('a', { href: `#/gates/${enc(o.gate)}` }, o.gate)),
      h('td', {}, scopeText(o)), h('td', {}, fmtTime(o.startsAt)),
      h('td', {}, o.expiresAt ? [fmtTime(o.expiresAt), ' ', h('span', { class: 'muted' }, relTime(o.expiresAt))] : 'until cancelled'),
      h('td', {}, o.actor, o.approvalRequest ? h('span', { class: 'muted' }, ' (approved)') : null),
      h('td', { class: 'reason' }, o.emergency ? [badge('closed', 'EMERGENCY'), ' '] : null, o.reason),
      h('td', {}, cancelAction(o, ctx, refresh, may(o)))))));
}

function clustersTable(list) {
  return h('table', { class: 'plain' },
    h('thead', {}, h('tr', {}, ...['Cluster', 'State', 'Why', 'Next change', 'Spoke', 'Held'].map((t) => h('th', {}, t)))),
    h('tbody', {}, ...list.map((c) => h('tr', { 'data-cluster': c.name },
      h('td', {}, h('a', { href: `#/clusters/${enc(c.name)}` }, c.name)),
      h('td', {}, c.rolloutWave ? badge('waiting', `waiting for wave ${c.rolloutWave}`)
        : c.warn && c.state === 'closed' ? badge('would', `◌ would close (${(c.wouldSuspend || 0) + (c.wouldHoldObjects || 0)})`)
        : badge(c.state === 'closed' && c.held ? 'held' : c.state, c.state)),
      h('td', {}, c.reason),
      h('td', {}, c.nextTransition ? [fmtTime(c.nextTransition), ' ', h('span', { class: 'muted' }, relTime(c.nextTransition))] : '—'),
      h('td', {}, c.connected ? badge('online', 'connected') : badge('offline', 'offline')),
      h('td', {}, c.held ? badge('held', String(c.held)) : '0')))));
}
