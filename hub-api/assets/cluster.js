// Cluster page: its gates now (with cluster-scoped actions and, for rollout
// gates, the cluster's place in the current rollout), the open/close
// requests made inside the cluster (with the Kubernetes user; cancellable),
// the other overrides that apply to it, the Flux objects its spoke reported
// (suspended by which gates, Flux's Ready condition with its message, applied
// vs newest revision, held), the objects held inside its Kustomizations
// (holdObjects gates), the Gate objects made in the cluster (local gates,
// read-only), the spoke's health, and what the hub had to change in or leave
// out of the cluster's latest report.

import { api, enc } from './api.js';
import { h, replace, fmtTime, relTime, badge } from './dom.js';
import { gateActions, cancelAction } from './actions.js';
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
  // Requests made in the cluster have their own section.
  const mine = overrides.filter((o) => gates.has(o.gate) && applies(o, c) && !o.requestedIn);
  const requests = st.localRequests || [];
  const offset = c.clockOffsetMs;
  const heldCount = st.objects.filter((o) => o.held).length;
  replace(main,
    h('div', { class: 'page-head' },
      h('h1', {}, h('span', { class: 'kind' }, 'Cluster '), c.name),
      st.open ? badge('open', 'changes may flow') : badge(heldCount || st.counts.heldObjects ? 'held' : 'closed', `closed by ${st.closedBy.join(', ')}`),
      c.connected ? badge('online', 'spoke connected') : badge('offline', 'spoke offline')),
    h('section', { class: 'card facts' },
      fact('Labels', Object.keys(c.labels).length ? Object.entries(c.labels).map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`)) : '—'),
      fact('Spoke', c.connected ? `connected to ${c.connectedReplica || 'a hub replica'}` : 'not connected — it keeps enforcing its last snapshot'),
      fact('Spoke version', c.spokeVersion
        ? h('span', { class: c.spokeSkew === 'unsupported' ? 'warn' : '' }, c.spokeVersion,
          c.spokeSkew === 'unsupported' ? ' ⚠ outside the versions this hub supports: upgrade the spoke' : '')
        : '—'),
      // How the spoke signs in: a cluster token, or the cluster's own JWT (issue 52).
      fact('Signs in with', c.identity
        ? [h('code', {}, c.identity.subject), ' of ', h('code', {}, c.identity.issuer), c.identity.jwksPinned ? ' (pinned keys)' : ' (keys from discovery)']
        : 'cluster token'),
      fact('Last seen', c.lastSeenAt ? [fmtTime(c.lastSeenAt), ' ', h('span', { class: 'muted' }, `(${relTime(c.lastSeenAt)})`)] : 'never'),
      fact('Clock offset', offset === null || offset === undefined ? '—'
        : h('span', { class: Math.abs(offset) > 2000 ? 'warn' : '' }, `${offset > 0 ? '+' : ''}${offset} ms${Math.abs(offset) > 2000 ? ' ⚠ windows open/close off by this much' : ''}`)),
      // The cluster's own open/closed state, not the earliest change of any gate (those are in the rows).
      fact('Next change', st.nextTransition ? [fmtTime(st.nextTransition), ' ', h('span', { class: 'muted' }, `(${relTime(st.nextTransition)})`)] : '—',
        st.nextTransition ? `when this cluster ${st.open ? 'closes' : 'opens'}` : 'this cluster stays as it is (within the look-ahead)'),
      fact('Desired revision', String(c.desiredRevision)),
      // Issue 47: the snapshot as the spoke persisted it, and the hub's over-budget hold.
      fact('Persisted snapshot', persistedFact(c)),
      c.snapshotOverBudget ? fact('Snapshot over budget', h('span', { class: 'warn', id: 'snapshot-over-budget' },
        `revision ${c.snapshotOverBudget.revision} is ${c.snapshotOverBudget.bytes} bytes, over ${c.snapshotOverBudget.budget}, since ${fmtTime(c.snapshotOverBudget.since)}: every Flux object is held until its gates fit`)) : null),
    h('section', { class: 'card' },
      h('h2', {}, `Gates (${st.gates.length})`),
      st.gates.length ? h('table', { class: 'plain', id: 'cluster-gates' },
        h('thead', {}, h('tr', {}, ...['Gate', 'State', 'Why', 'Rollout', 'Next change', 'Held', 'Held objects', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, ...st.gates.map((g) => h('tr', { 'data-gate': g.gate },
          h('td', {}, h('a', { href: `#/gates/${enc(g.gate)}` }, g.gate)),
          h('td', {}, badge(g.state === 'closed' && g.held ? 'held' : g.state, g.state)),
          h('td', {}, g.reason),
          rolloutCell(g.rollout),
          h('td', {}, g.nextTransition ? [fmtTime(g.nextTransition), ' ', h('span', { class: 'muted' }, relTime(g.nextTransition))] : '—'),
          h('td', {}, String(g.held)),
          h('td', { class: 'held-objects' }, String(g.heldObjects ?? 0),
            g.wouldHoldObjects ? [' ', badge('would', `◌ ${g.wouldHoldObjects} would hold`)] : null),
          h('td', {}, gateActions(g.gate, ctx, { cluster: c.name, after: refresh, may: g.mayOperate }))))))
        : h('p', { class: 'muted' }, 'No gate governs this cluster.')),
    localGatesSection(st),
    h('section', { class: 'card' },
      h('h2', {}, `Requests made in the cluster (${requests.length})`),
      requests.length ? localRequestsTable(requests, ctx, refresh)
        : h('p', { class: 'muted' }, 'None: open/close requests annotated on this cluster\'s Gate objects show here once its spoke reports them.')),
    h('section', { class: 'card' },
      h('h2', {}, `Overrides on this cluster (${mine.length})`),
      mine.length ? overridesTable(mine, ctx, refresh, (o) => st.gates.some((g) => g.gate === o.gate && g.mayOperate)) : h('p', { class: 'muted' }, 'None.')),
    h('section', { class: 'card' },
      h('h2', {}, `Governed objects (${st.objects.length}; ${heldCount} held)`),
      st.objects.length ? objectsTable(st.objects) : h('p', { class: 'muted' }, c.lastSeenAt ? 'The spoke reported no governed Flux objects.' : 'No report yet: the spoke has not connected.')),
    reportProblemsSection(st),
    heldObjectsSection(st));
}

/**
 * Objects of the latest report stored with U+0000 replaced by U+FFFD, or left out, and a
 * report the database refused as a whole (the status above is then older). Shown only when
 * there is something to show.
 */
function reportProblemsSection(st) {
  const p = st.reportProblems || { items: [], total: 0 };
  if (!p.total && !p.writeError) return null;
  return h('section', { class: 'card', id: 'report-problems' },
    h('h2', {}, `Report problems (${p.total})`),
    p.writeError ? h('p', { class: 'warn', id: 'report-write-error' },
      `The hub could not store this cluster's latest report${p.writeErrorAt ? ` (${fmtTime(p.writeErrorAt)})` : ''}; the status above is from an older one: ${p.writeError}`) : null,
    p.items.length ? h('table', { class: 'plain' },
      h('thead', {}, h('tr', {}, ...['Object', 'Field', 'Action', 'Why'].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...p.items.map((i) => h('tr', { 'data-action': i.action },
        h('td', {}, i.object || '—'), h('td', { class: 'rev' }, i.field),
        h('td', {}, i.action === 'dropped' ? badge('closed', 'left out') : badge('info', 'stored, U+0000 → U+FFFD')),
        h('td', {}, i.message))))) : null,
    p.total > p.items.length ? h('p', { class: 'muted' }, `First ${p.items.length} of ${p.total} listed.`) : null);
}

// The cluster's place in a gate's current rollout, as the fleet grid marks it.
const HEALTH = { healthy: 'open', progressing: 'info', unknown: 'offline', failed: 'closed' };

/** Waiting for wave N, or released in it and how healthy (the failing object's Ready message as the title). */
function rolloutCell(r) {
  if (!r) return h('td', { class: 'rollout-place muted' }, '—');
  const wave = `wave ${r.wave} '${r.waveName}'`;
  const halted = r.state === 'running' || r.state === 'completed' ? '' : ` (rollout ${r.state})`;
  const word = r.releasedAt ? `released in ${wave}: ${r.health}${halted}` : `waiting for ${wave}${halted}`;
  return h('td', { class: 'rollout-place', 'data-rollout-health': r.health, title: r.detail || '' },
    r.releasedAt ? badge(HEALTH[r.health] || 'info', word) : badge('waiting', word),
    r.detail ? h('div', { class: 'ready-message muted' }, r.detail) : null);
}

/** Objects inside Kustomizations that holdObjects gates select (held ones first, as the hub sends them). */
function heldObjectsSection(st) {
  const list = st.heldObjects || [];
  const held = list.filter((o) => o.held).length;
  const waiting = list.filter((o) => o.heldBy.length && o.newerRevisionApplied).length;
  const notPermitted = list.filter((o) => o.notPermitted).length;
  const would = list.filter((o) => (o.wouldHoldBy || []).length).length;
  return h('section', { class: 'card', id: 'held-objects-card' },
    h('h2', {}, `Held objects (${held} held of ${list.length} selected${waiting ? `; ${waiting} with changes waiting` : ''}${would ? `; ◌ ${would} would hold` : ''})`),
    notPermitted ? h('p', { class: 'warn', id: 'hold-not-permitted' },
      `⚠ HoldNotPermitted: ${notPermitted} object(s) that holdObjects gates select cannot be held on this cluster: `
      + 'their kind is not in the spoke\'s --held-kinds, so they roll out while the gate is closed.') : null,
    list.length ? h('table', { class: 'plain', id: 'held-objects' },
      h('thead', {}, h('tr', {}, ...['Kind', 'Namespace', 'Name', 'Kustomization', 'Held', 'Since revision', 'Changes waiting'].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...list.map((o) => h('tr', { 'data-object': `${o.kind}/${o.namespace}/${o.name}` },
        h('td', { title: o.group ? `${o.group}/${o.kind}` : o.kind }, o.kind),
        h('td', {}, o.namespace || '—'), h('td', {}, o.name),
        h('td', {}, `${o.kustomizationNamespace}/${o.kustomizationName}`),
        h('td', { class: 'held-by' }, o.notPermitted ? badge('offline', `not permitted (--held-kinds); gates ${o.gates.join(', ')}`)
          : o.heldBy.length ? badge('held', `by ${o.heldBy.join(', ')}`)
          : o.heldByPerson ? badge('info', 'by a person (left alone)')
          // A warn gate marks nothing: this is what enforcing it would hold.
          : (o.wouldHoldBy || []).length ? badge('would', `◌ would hold: ${o.wouldHoldBy.join(', ')}`) : 'no'),
        h('td', { class: 'rev', title: o.heldSince ? `since ${fmtTime(o.heldSince)}` : '' },
          o.heldSinceRevision || (!o.heldBy.length && o.wouldHoldSinceRevision) || '—'),
        h('td', { class: 'waiting' }, o.heldBy.length && o.newerRevisionApplied ? 'yes'
          : !o.heldBy.length && o.wouldHoldNewerRevision ? 'would wait' : 'no')))))
      : h('p', { class: 'muted' }, 'No holdObjects gate selects objects on this cluster (or its spoke predates object holds).'));
}

/**
 * Gate objects made in the cluster (delivered from Git), as its spoke reports them:
 * read-only here (they change in Git). Enforced ones count in the cluster's state.
 */
function localGatesSection(st) {
  const list = st.localGates || [];
  const enforced = list.filter((g) => g.enforced).length;
  return h('section', { class: 'card', id: 'local-gates-card' },
    h('h2', {}, `Local gates (${list.length}; ${enforced} enforced)`),
    list.length ? h('table', { class: 'plain', id: 'local-gates' },
      h('thead', {}, h('tr', {}, ...['Gate', 'Enforced', 'State', 'Why', 'Next change', 'Held'].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...list.map((g) => h('tr', { 'data-local-gate': g.name },
        h('td', {}, g.name),
        h('td', { class: 'enforced', title: `${g.readyReason}: ${g.readyMessage}` }, g.enforced ? 'yes' : badge('info', `no (${g.readyReason})`)),
        h('td', { class: 'state' }, g.enforced ? badge(g.state === 'closed' && g.held ? 'held' : g.state, g.state) : '—'),
        h('td', { class: 'reason' }, g.enforced ? `${g.reason}: ${g.message}` : g.readyMessage),
        h('td', {}, g.nextTransition ? [fmtTime(g.nextTransition), ' ', h('span', { class: 'muted' }, relTime(g.nextTransition))] : '—'),
        h('td', {}, `${g.held} of ${g.governed}`)))))
      : h('p', { class: 'muted' }, 'None: Gate objects made in this cluster (from Git, not the hub\'s) show here once its spoke reports them.'));
}

/** Live requests made in the cluster (kubectl annotate gate/X open|close.gate.fleetgate.io/requestedAt=…). */
function localRequestsTable(list, ctx, refresh) {
  return h('table', { class: 'plain', id: 'local-requests' },
    h('thead', {}, h('tr', {}, ...['Request', 'Gate', 'Requested by', 'Requested at', 'Until', 'Reason', ''].map((t) => h('th', {}, t)))),
    h('tbody', {}, ...list.map((o) => h('tr', { 'data-override': o.id, 'data-gate': o.gate },
      h('td', {}, badge(o.state, o.state === 'open' ? 'open' : 'close')),
      h('td', {}, h('a', { href: `#/gates/${enc(o.gate)}` }, o.gate)),
      h('td', { class: 'requested-by' }, o.requestedBy || h('span', { class: 'muted' }, 'unknown')),
      h('td', {}, fmtTime(o.createdAt)),
      h('td', {}, o.expiresAt ? [fmtTime(o.expiresAt), ' ', h('span', { class: 'muted' }, relTime(o.expiresAt))] : 'until cancelled'),
      h('td', { class: 'reason' }, o.reason), h('td', {}, cancelAction(o, ctx, refresh))))));
}

/** The spoke's persisted copy of its snapshot: what a restart without the hub enforces. */
function persistedFact(c) {
  const p = c.snapshotPersistence;
  if (!p) return h('span', { class: 'muted' }, '— (the spoke does not report it)');
  const copy = p.persistedRevision ? `revision ${p.persistedRevision} (${p.storedBytes} bytes in ${p.configMaps} ConfigMap${p.configMaps === 1 ? '' : 's'})` : 'no snapshot';
  if (p.state === 'failing') {
    return h('span', { class: 'warn', id: 'snapshot-not-persisted' },
      `⚠ revision ${p.failingRevision} is enforced but not persisted since ${fmtTime(p.failingSince)}: ${p.error || 'no reason given'}; a restart without the hub would enforce ${copy}`);
  }
  return p.state === 'persisted' ? copy : h('span', { class: 'muted' }, 'nothing to persist yet');
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
