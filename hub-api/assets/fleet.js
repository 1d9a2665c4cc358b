// Fleet view: clusters × gates grid with counts, filters (name/labels, gate,
// state), grouping by a label with collapsible groups, and the next
// transition on hover. Built for 10,000 clusters: the hub filters, orders,
// groups and pages the rows (`/api/v1/dashboard/fleet?limit=…`), so the page
// receives and draws one page of rows and the fleet's counts, never the fleet.

import { api } from './api.js';
import { h, replace, fmtTime, relTime, badge } from './dom.js';

/** Rows per page. */
export const PAGE_SIZE = 100;

// Filters and the page survive navigation and live refreshes.
const ui = { text: '', gate: '', state: '', group: '', sort: 'name', collapsed: new Set(), cursors: [null] };

export async function renderFleet(main) {
  const counts = h('div', { class: 'counts', id: 'counts' });
  const grid = h('div', { class: 'grid-wrap', id: 'grid' });
  const pager = h('div', { class: 'pager', id: 'pager' });
  const at = h('span', { class: 'muted', id: 'evaluated' });
  const gateSel = h('select', { id: 'filter-gate', 'aria-label': 'Gate' });
  const groupSel = h('select', { id: 'group-by', 'aria-label': 'Group by label' });
  const stateSel = h('select', { id: 'filter-state', 'aria-label': 'State' },
    ...[['', 'Any state'], ['closed', 'Any gate closed'], ['held', 'Held changes'], ['open', 'All gates open'], ['offline', 'Spoke offline']]
      .map(([v, t]) => h('option', { value: v }, t)));
  const sortSel = h('select', { id: 'sort', 'aria-label': 'Sort' },
    h('option', { value: 'name' }, 'by name'), h('option', { value: 'attention' }, 'needs attention first'));
  sortSel.value = ui.sort;
  const text = h('input', {
    id: 'filter-text', type: 'search', placeholder: 'Filter: name or labels (env=prod, region!=eu)',
    value: ui.text, 'aria-label': 'Filter clusters',
  });
  let seq = 0;
  // A new filter starts at the first page.
  const refilter = () => { ui.cursors = [null]; void refresh().catch(() => {}); };
  let typing = null;
  text.addEventListener('input', () => {
    ui.text = text.value;
    clearTimeout(typing);
    typing = setTimeout(refilter, 150);
  });
  gateSel.addEventListener('change', () => { ui.gate = gateSel.value; refilter(); });
  stateSel.addEventListener('change', () => { ui.state = stateSel.value; refilter(); });
  groupSel.addEventListener('change', () => { ui.group = groupSel.value; ui.collapsed.clear(); refilter(); });
  sortSel.addEventListener('change', () => { ui.sort = sortSel.value; refilter(); });
  stateSel.value = ui.state;
  grid.addEventListener('click', (ev) => {
    const toggle = ev.target.closest('[data-group]');
    if (toggle) {
      const g = toggle.dataset.group;
      if (ui.collapsed.has(g)) ui.collapsed.delete(g); else ui.collapsed.add(g);
      refilter();
      return;
    }
    const cell = ev.target.closest('td[data-cluster]');
    if (cell) location.hash = `#/clusters/${encodeURIComponent(cell.dataset.cluster)}`;
  });
  counts.addEventListener('click', (ev) => {
    const c = ev.target.closest('[data-filter]');
    if (!c) return;
    ui.state = ui.state === c.dataset.filter ? '' : c.dataset.filter;
    stateSel.value = ui.state;
    refilter();
  });
  pager.addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-page]');
    if (!b || b.disabled) return;
    if (b.dataset.page === 'next' && b.dataset.cursor) ui.cursors.push(b.dataset.cursor);
    if (b.dataset.page === 'prev' && ui.cursors.length > 1) ui.cursors.pop();
    void refresh().catch(() => {});
  });

  replace(main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Fleet'), at),
    counts,
    h('div', { class: 'toolbar' }, text, gateSel, stateSel, h('label', { class: 'inline' }, 'Group by ', groupSel),
      h('label', { class: 'inline' }, 'Sort ', sortSel)),
    legend(),
    pager,
    grid);

  async function refresh() {
    const mine = ++seq;
    const t0 = performance.now();
    const query = {
      limit: PAGE_SIZE, cursor: ui.cursors[ui.cursors.length - 1], filter: ui.text.trim(), gate: ui.gate,
      state: ui.state, sort: ui.sort === 'name' ? '' : ui.sort, group: ui.group,
      collapsed: ui.group ? [...ui.collapsed].join(',') : '',
    };
    let data;
    try {
      data = await api('/api/v1/dashboard/fleet', { query });
    } catch (e) {
      // A gate deleted meanwhile: show every gate again.
      if (e.field === 'gate' && ui.gate) { ui.gate = ''; return refresh(); }
      throw e;
    }
    if (mine !== seq) return; // a newer request is under way
    const t1 = performance.now();
    if (data.clusters.length === 0 && data.total > 0 && ui.cursors.length > 1) {
      // The rows shrank under the page: back to the first.
      ui.cursors = [null];
      return refresh();
    }
    fillSelect(gateSel, [['', 'All gates'], ...data.gates.map((g) => [g, g])], ui.gate);
    fillSelect(groupSel, [['', 'none'], ...data.labelKeys.map((k) => [k, k])], ui.group);
    ui.gate = gateSel.value;
    ui.group = groupSel.value;
    at.textContent = `evaluated ${fmtTime(data.at)}`;
    drawCounts(data, counts);
    drawPager(data, pager);
    draw(data, grid);
    void grid.offsetHeight; // include layout in the measured time
    const t2 = performance.now();
    // Read by the browser benchmark; harmless otherwise.
    window.fleetgateTimings = {
      fetchMs: t1 - t0, renderMs: t2 - t1, clusters: data.clusters.length, total: data.total,
      fleet: data.counts.clusters, gates: data.gates.length,
    };
  }
  await refresh();
  return { refresh };
}

function fillSelect(sel, options, wanted) {
  const same = sel.options.length === options.length && options.every(([v], i) => sel.options[i].value === v);
  if (!same) replace(sel, ...options.map(([v, t]) => h('option', { value: v }, t)));
  sel.value = options.some(([v]) => v === wanted) ? wanted : '';
}

function legend() {
  return h('p', { class: 'legend' },
    badge('open', 'open'), badge('closed', 'closed'), badge('held', 'closed, changes held'),
    badge('waiting', 'waiting for rollout wave N'),
    badge('offline', 'spoke offline'), h('span', { class: 'badge na' }, '· not governed'),
    h('span', { class: 'muted' }, ' — hover a cell for the reason and the next change; click for the cluster.'));
}

function drawPager(data, el) {
  const first = data.total ? data.offset + 1 : 0;
  const last = data.offset + data.clusters.length;
  replace(el,
    h('button', { type: 'button', id: 'page-prev', 'data-page': 'prev', disabled: ui.cursors.length > 1 ? null : 'disabled' }, '‹ Previous'),
    h('span', { id: 'page-info', class: 'muted' }, ` ${first}–${last} of ${data.total} `),
    h('button', {
      type: 'button', id: 'page-next', 'data-page': 'next', 'data-cursor': data.nextCursor || '',
      disabled: data.nextCursor ? null : 'disabled',
    }, 'Next ›'));
}

function groupRow(g, span) {
  const open = !g.collapsed;
  return h('tr', { class: 'group-row' }, h('th', { colspan: span, scope: 'rowgroup' },
    h('button', { type: 'button', class: 'group-toggle', 'data-group': g.key, 'aria-expanded': String(open) },
      open ? '▾ ' : '▸ ', `${ui.group}=${g.key}`),
    h('span', { class: 'group-counts' }, ` ${g.clusters} clusters · ${g.closed} closed · ${g.held} with held changes · ${g.offline} offline`)));
}

function draw(data, gridEl) {
  const cols = data.gates.map((_, i) => i).filter((i) => !ui.gate || data.gates[i] === ui.gate);
  const rows = data.clusters;
  const byName = new Map(rows.map((c) => [c.name, c]));
  gridEl.onmouseover = (ev) => {
    const td = ev.target.closest('td[data-cluster]');
    if (!td || td.title) return;
    const c = byName.get(td.dataset.cluster);
    const i = data.gates.indexOf(td.dataset.gate);
    if (c && i >= 0) td.title = cellTitle(c, data.gates[i], c.cells[i]);
  };
  const head = h('tr', {}, h('th', { class: 'name-col', scope: 'col' }, `Cluster (${data.total})`),
    ...cols.map((i) => h('th', { scope: 'col', class: 'gate-col' },
      h('a', { href: `#/gates/${encodeURIComponent(data.gates[i])}`, title: `Gate ${data.gates[i]}` }, data.gates[i]))));
  const body = document.createDocumentFragment();
  const groups = data.groups || [];
  const from = data.offset;
  const lastPage = !data.nextCursor;
  // A group's header goes where its rows start on this page (or, for a group running on
  // from the previous page, at the top); a collapsed group's where its rows would be.
  for (let i = 0; i <= rows.length; i++) {
    const pos = from + i;
    for (const g of groups) {
      const starts = g.at === pos && (i < rows.length || (g.collapsed && lastPage));
      const continues = i === 0 && !g.collapsed && g.at < pos && pos < g.at + g.clusters;
      if (starts || continues) body.append(groupRow(g, cols.length + 1));
    }
    if (i < rows.length) body.append(row(rows[i], cols, data.gates));
  }
  const table = h('table', { class: 'grid', id: 'fleet-grid' }, h('thead', {}, head), h('tbody', {}, body));
  // Live refreshes must not throw the reader back to the top of the page.
  const { scrollTop, scrollLeft } = gridEl;
  const empty = data.counts.clusters ? 'No cluster matches the filters.' : 'No clusters registered yet.';
  replace(gridEl, rows.length || groups.length ? table : h('p', { class: 'empty' }, empty));
  gridEl.scrollTop = scrollTop;
  gridEl.scrollLeft = scrollLeft;
}

/** The hover text of a cell, built when first hovered (thousands of cells). */
export function cellTitle(c, gate, cell, now = Date.now()) {
  if (!cell) return `Gate ${gate} does not govern ${c.name}`;
  const held = cell.state === 'closed' && cell.held > 0 ? `, ${cell.held} change(s) held` : '';
  const next = cell.nextTransition ? `\nNext change: ${fmtTime(cell.nextTransition)} (${relTime(cell.nextTransition, now)})` : '\nNo change scheduled';
  const off = c.connected ? '' : '\nSpoke offline: it enforces its last snapshot on its own clock';
  return `${gate} on ${c.name}: ${cell.state}${held}\n${cell.reason}${next}${off}`;
}

/** Objects held inside Kustomizations (`mode: holdObjects`), by fleetgate and by people. */
export function heldObjectsBadge(c) {
  const n = c.heldObjects || 0;
  const person = c.heldObjectsByPerson || 0;
  if (!n && !person) return null;
  const waiting = c.heldObjectsWaiting ? `, ${c.heldObjectsWaiting} with changes waiting` : '';
  const byPerson = person ? `; ${person} held by a person` : '';
  return h('a', {
    class: 'mini held-objects', href: `#/clusters/${encodeURIComponent(c.name)}`, 'data-held-objects': String(n),
    title: `${n} object(s) inside Kustomizations held by fleetgate${waiting}${byPerson}`,
  }, `⏸ ${n} held${person ? ` +${person}` : ''}`);
}

/** Objects inside Kustomizations closed warn-mode gates would hold if enforced (nothing is marked). */
export function wouldHoldObjectsBadge(c) {
  const n = c.wouldHoldObjects || 0;
  if (!n) return null;
  return h('a', {
    class: 'mini would-hold-objects', href: `#/clusters/${encodeURIComponent(c.name)}`, 'data-would-hold-objects': String(n),
    title: `warn mode: ${n} object(s) inside Kustomizations would be held if the warn gates were enforced; nothing is held`,
  }, `◌ ${n} would hold`);
}

/** HoldNotPermitted: gates select objects whose kind the spoke may not hold (`--held-kinds`). */
export function notPermittedBadge(c) {
  const n = c.heldObjectsNotPermitted || 0;
  if (!n) return null;
  return h('a', {
    class: 'mini not-permitted', href: `#/clusters/${encodeURIComponent(c.name)}`, 'data-not-permitted': String(n),
    title: `HoldNotPermitted: holdObjects gates select ${n} object(s) whose kind this spoke's --held-kinds does not enable; a closed gate does NOT hold them`,
  }, `⚠ ${n} not holdable`);
}

/** The cluster's latest report had text the hub could not store as is, or was refused. */
export function reportProblemsBadge(c) {
  const n = c.reportProblems || 0;
  if (!n && !c.reportRefused) return null;
  const title = c.reportRefused
    ? 'The database refused this cluster\'s latest report: its status is from an older report'
    : `${n} object(s) of the latest report stored repaired (U+0000 replaced by U+FFFD) or left out`;
  return h('a', {
    class: 'mini not-permitted', href: `#/clusters/${encodeURIComponent(c.name)}`, 'data-report-problems': String(n),
    title,
  }, c.reportRefused ? '⚠ report refused' : `⚠ ${n} report problem${n === 1 ? '' : 's'}`);
}

function row(c, cols, gates) {
  const tr = document.createElement('tr');
  if (!c.connected) tr.className = 'offline-row';
  const name = h('th', { scope: 'row', class: 'name-col' },
    h('a', { href: `#/clusters/${encodeURIComponent(c.name)}` }, c.name),
    c.connected ? null : h('span', { class: 'mini offline', title: `Spoke offline; last seen ${c.lastSeenAt ? fmtTime(c.lastSeenAt) : 'never'}` }, '⚠ offline'),
    c.spokeSkew === 'unsupported' ? h('span', { class: 'mini offline', title: `Spoke ${c.spokeVersion} is outside the versions this hub supports: upgrade it` }, `⚠ spoke ${c.spokeVersion}`) : null,
    c.held ? h('span', { class: 'mini held', title: `${c.held} object(s) with a change waiting` }, `‖ ${c.held}`) : null,
    heldObjectsBadge(c),
    wouldHoldObjectsBadge(c),
    notPermittedBadge(c),
    reportProblemsBadge(c));
  tr.append(name);
  for (const i of cols) {
    const cell = c.cells[i];
    const td = document.createElement('td');
    td.dataset.cluster = c.name;
    td.dataset.gate = gates[i];
    let kind;
    let icon;
    if (!cell) {
      kind = 'na';
      icon = '·';
    } else {
      // A failed rollout wave outranks everything (a halt keeps the canary open, but what it
      // runs failed); a rollout's wave outranks held: the changes wait for the wave.
      kind = cell.rolloutFailure ? 'failed' : cell.state === 'open' ? 'open' : cell.warn ? 'would'
        : cell.rolloutWave ? 'waiting' : (cell.held > 0 ? 'held' : 'closed');
      icon = { open: '✓', held: '‖', closed: '✕', waiting: '◔', would: '◌', failed: '✗' }[kind];
    }
    td.dataset.state = kind;
    td.className = `cell ${kind}${c.connected ? '' : ' offline'}`;
    const ic = document.createElement('span');
    ic.className = 'icon';
    ic.textContent = icon;
    const word = document.createElement('span');
    word.className = 'word';
    word.textContent = kind === 'na' ? '' : kind === 'waiting' ? `wave ${cell.rolloutWave}`
      : kind === 'would' ? `would close${cell.wouldSuspend || cell.wouldHoldObjects ? ` (${(cell.wouldSuspend || 0) + (cell.wouldHoldObjects || 0)})` : ''}` : kind;
    if (kind === 'would') {
      td.title = `warn mode: would suspend ${cell.wouldSuspend || 0} object(s)`
        + `${cell.wouldHoldObjects ? ` and hold ${cell.wouldHoldObjects} object(s) inside Kustomizations` : ''} if enforced; nothing is held`;
      td.dataset.wouldHoldObjects = String(cell.wouldHoldObjects || 0);
    }
    td.append(ic, word);
    if (kind === 'failed') {
      // The failing object and why, on the cell itself (truncated; whole in the tooltip).
      const f = cell.rolloutFailure;
      word.textContent = `wave ${f.wave} failed`;
      td.title = `rollout wave ${f.wave} '${f.waveName}' failed (${f.state}): ${f.detail}`;
      td.append(h('span', { class: 'failure' }, f.detail));
    }
    tr.append(td);
  }
  return tr;
}

function drawCounts(data, el) {
  const { clusters, open, closed, held, offline } = data.counts;
  const card = (filter, kind, n, label) => h('button', {
    type: 'button', class: `count ${kind}${ui.state === filter ? ' active' : ''}`, 'data-filter': filter, id: `count-${filter}`,
  }, h('span', { class: 'n' }, n), h('span', { class: 'label' }, label));
  replace(el,
    h('div', { class: 'count total' }, h('span', { class: 'n' }, clusters), h('span', { class: 'label' }, 'clusters')),
    card('open', 'open', open, '✓ may change now'),
    card('closed', 'closed', closed, '✕ a gate closed'),
    card('held', 'held', held, '‖ changes held'),
    card('offline', 'offline', offline, '⚠ spoke offline'),
    h('a', { class: 'count info', href: '#/audit' }, h('span', { class: 'n', id: 'count-overrides' }, data.overrides), h('span', { class: 'label' }, 'live overrides')));
}
