// Cluster page: its gates now (with cluster-scoped actions), the overrides
// that apply to it, the Flux objects its spoke reported (suspended by which
// gates, Flux's Ready condition with its message, applied vs newest revision,
// held), and the spoke's health.

import { api, enc } from './api.js';
import { h, replace, fmtTime, relTime, badge } from './dom.js';
import { gateActions } from './actions.js';
import { overridesTable } from './gate.js';

export async function renderCluster(main, ctx, name) {
  async function refresh() {
    const [st, ovs] = await Promise.all([
      api(`/api/v1/clusters/${enc(name)}/status`),
      api('/api/v1/overrides', { query: { limit: 1000 } }),
    ]);
    draw(main, ctx, st, ovs.items, refresh);
  }
  await refresh();
  return { refresh };
}

/** Kubernetes label selector semantics (matchLabels + matchExpressions). */
function selects(sel, labels) {
  for (const [k, v] of Object.entries(sel.matchLabels || {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions || []) {
    const has = Object.hasOwn(labels, e.key);
    const vals = e.values || [];
    const ok = { In: has && vals.includes(labels[e.key]), NotIn: !has || !vals.includes(labels[e.key]), Exists: has, DoesNotExist: !has }[e.operator];
    if (!ok) return false;
  }
  return true;
}

function applies(o, c) {
  if (!o.clusters) return true;
  return (o.clusters.names || []).includes(c.name) || (o.clusters.selector ? selects(o.clusters.selector, c.labels) : false);
}

function draw(main, ctx, st, overrides, refresh) {
  const c = st.cluster;
  const gates = new Set(st.gates.map((g) => g.gate));
  const mine = overrides.filter((o) => gates.has(o.gate) && applies(o, c));
  const offset = c.clockOffsetMs;
  const heldCount = st.objects.filter((o) => o.held).length;
  replace(main,
    h('div', { class: 'page-head' },
      h('h1', {}, h('span', { class: 'kind' }, 'Cluster '), c.name),
      st.open ? badge('open', 'changes may flow') : badge(heldCount ? 'held' : 'closed', `closed by ${st.closedBy.join(', ')}`),
      c.connected ? badge('online', 'spoke connected') : badge('offline', 'spoke offline')),
    h('section', { class: 'card facts' },
      fact('Labels', Object.keys(c.labels).length ? Object.entries(c.labels).map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`)) : '—'),
      fact('Spoke', c.connected ? `connected to ${c.connectedReplica || 'a hub replica'}` : 'not connected — it keeps enforcing its last snapshot'),
      fact('Spoke version', c.spokeVersion || '—'),
      fact('Last seen', c.lastSeenAt ? [fmtTime(c.lastSeenAt), ' ', h('span', { class: 'muted' }, `(${relTime(c.lastSeenAt)})`)] : 'never'),
      fact('Clock offset', offset === null || offset === undefined ? '—'
        : h('span', { class: Math.abs(offset) > 2000 ? 'warn' : '' }, `${offset > 0 ? '+' : ''}${offset} ms${Math.abs(offset) > 2000 ? ' ⚠ windows open/close off by this much' : ''}`)),
      // The cluster's own open/closed state, not the earliest change of any gate (those are in the rows).
      fact('Next change', st.nextTransition ? [fmtTime(st.nextTransition), ' ', h('span', { class: 'muted' }, `(${relTime(st.nextTransition)})`)] : '—',
        st.nextTransition ? `when this cluster ${st.open ? 'closes' : 'opens'}` : 'this cluster stays as it is (within the look-ahead)'),
      fact('Desired revision', String(c.desiredRevision))),
    h('section', { class: 'card' },
      h('h2', {}, `Gates (${st.gates.length})`),
      st.gates.length ? h('table', { class: 'plain', id: 'cluster-gates' },
        h('thead', {}, h('tr', {}, ...['Gate', 'State', 'Why', 'Next change', 'Held', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, ...st.gates.map((g) => h('tr', { 'data-gate': g.gate },
          h('td', {}, h('a', { href: `#/gates/${enc(g.gate)}` }, g.gate)),
          h('td', {}, badge(g.state === 'closed' && g.held ? 'held' : g.state, g.state)),
          h('td', {}, g.reason),
          h('td', {}, g.nextTransition ? [fmtTime(g.nextTransition), ' ', h('span', { class: 'muted' }, relTime(g.nextTransition))] : '—'),
          h('td', {}, String(g.held)),
          h('td', {}, gateActions(g.gate, ctx, { cluster: c.name, after: refresh }))))))
        : h('p', { class: 'muted' }, 'No gate governs this cluster.')),
    h('section', { class: 'card' },
      h('h2', {}, `Overrides on this cluster (${mine.length})`),
      mine.length ? overridesTable(mine, ctx, refresh) : h('p', { class: 'muted' }, 'None.')),
    h('section', { class: 'card' },
      h('h2', {}, `Governed objects (${st.objects.length}; ${heldCount} held)`),
      st.objects.length ? objectsTable(st.objects) : h('p', { class: 'muted' }, c.lastSeenAt ? 'The spoke reported no governed Flux objects.' : 'No report yet: the spoke has not connected.')));
}

function fact(label, value, title) {
  return h('div', { class: 'fact', 'data-fact': label, title }, h('span', { class: 'fact-label' }, label), h('span', { class: 'fact-value' }, value));
}

/** Flux's Ready condition as the spoke reported it, with its message, Stalled and a
 * generation Flux has not reconciled yet. */
function readyCell(o) {
  if (!o.ready) return h('span', { class: 'muted', title: 'no Ready condition reported' }, '—');
  const kind = { True: 'open', False: 'closed' }[o.ready] || 'info';
  const text = o.ready === 'True' ? 'Ready' : (o.readyReason || (o.ready === 'False' ? 'Not ready' : 'Unknown'));
  const behind = o.generation && (o.observedGeneration || 0) < o.generation;
  return [
    badge(kind, text),
    o.stalled ? [' ', badge('offline', 'Stalled')] : '',
    o.ready !== 'True' && o.readyMessage ? h('div', { class: 'ready-message muted' }, o.readyMessage) : '',
    behind ? h('div', { class: 'ready-message muted', title: 'metadata.generation / status.observedGeneration' },
      `generation ${o.generation} not reconciled (observed ${o.observedGeneration || 0})`) : '',
  ];
}

function objectsTable(objects) {
  const sorted = [...objects].sort((a, b) => Number(b.held) - Number(a.held) || a.kind.localeCompare(b.kind) || a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  return h('table', { class: 'plain', id: 'objects' },
    h('thead', {}, h('tr', {}, ...['Kind', 'Namespace', 'Name', 'Ready', 'Suspended', 'Gates', 'Applied revision', 'Newest revision', 'Held'].map((t) => h('th', {}, t)))),
    h('tbody', {}, ...sorted.map((o) => h('tr', { 'data-object': `${o.kind}/${o.namespace}/${o.name}` },
      h('td', {}, o.kind), h('td', {}, o.namespace), h('td', {}, o.name),
      h('td', { class: 'ready' }, readyCell(o)),
      h('td', {}, o.suspendedByHuman ? badge('info', 'by a person (left alone)')
        : o.suspended ? badge('closed', `by ${o.suspendedBy.join(', ') || 'fleetgate'}`) : 'no'),
      h('td', {}, o.ignored ? [o.gates.join(', '), ' ', h('span', { class: 'muted', title: 'annotated fleetgate.io/ignore: "true": never governed' }, '(ignored)')] : o.gates.join(', ')),
      h('td', { class: 'rev' }, o.lastAppliedRevision || '—',
        o.lastAttemptedRevision && o.lastAttemptedRevision !== o.lastAppliedRevision
          ? h('div', { class: 'muted', title: 'the revision Flux tried last' }, `attempted ${o.lastAttemptedRevision}`) : ''),
      h('td', { class: 'rev' }, o.newestSourceRevision || '—'),
      h('td', {}, o.held ? badge('held', 'held') : '')))));
}
