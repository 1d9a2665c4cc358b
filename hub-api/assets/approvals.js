// Pending approvals: override requests through gates with spec.approval that wait for
// other people. Each row says who asked, why, the ticket, how many approvals it has and
// needs, and when it expires. The hub says what the signed-in person may do with each
// (youMay): Approve and Reject for approvers other than the requester, Cancel for the
// requester (and admins). Recently decided requests are listed below.

import { api, enc } from './api.js';
import { h, replace, toast, fmtTime, relTime, badge } from './dom.js';
import { confirmDialog } from './actions.js';
import { scopeText } from './gate.js';

export async function renderApprovals(main, ctx) {
  async function refresh() {
    const [pending, recent] = await Promise.all([
      api('/api/v1/approvals', { query: { status: 'pending' } }),
      api('/api/v1/approvals', { query: { limit: 20 } }),
    ]);
    draw(main, pending.items, recent.items.filter((r) => r.status !== 'pending'), refresh);
    setPendingCount(pending.items.length);
  }
  await refresh();
  return { refresh };
}

/** The count beside "Approvals" in the navigation. */
export function setPendingCount(n) {
  const el = document.getElementById('nav-approvals-count');
  if (!el) return;
  el.textContent = n ? String(n) : '';
  el.hidden = !n;
}

function decide(r, how, after) {
  const verbs = {
    approve: { title: `Approve the ${r.state} request on ${r.gate}`, label: 'Approve', kind: 'primary', path: 'approve', method: 'POST' },
    reject: { title: `Reject the ${r.state} request on ${r.gate}`, label: 'Reject', kind: 'danger', path: 'reject', method: 'POST' },
    cancel: { title: `Withdraw your ${r.state} request on ${r.gate}`, label: 'Withdraw request', kind: 'danger', method: 'DELETE' },
  }[how];
  const left = r.required - r.approvals.length;
  const text = how === 'approve'
    ? `Requested by ${r.requester}: “${r.reason}”. ${left <= 1 ? `Your approval ${r.state === 'open' ? 'opens' : 'closes'} the gate${r.for ? ` for ${r.for}` : ''} at once.` : `${left - 1} more approval(s) needed after yours.`}`
    : how === 'reject' ? `Requested by ${r.requester}: “${r.reason}”. The request ends; nothing changes on any cluster.`
      : 'The request ends; nothing changes on any cluster.';
  return confirmDialog({
    title: verbs.title, text, confirmLabel: verbs.label, kind: verbs.kind,
    reasonRequired: how === 'reject',
    onConfirm: async ({ reason }) => {
      const path = `/api/v1/approvals/${enc(r.id)}${verbs.path ? `/${verbs.path}` : ''}`;
      const done = verbs.method === 'DELETE'
        ? await api(path, { method: 'DELETE', query: { reason: reason || undefined } })
        : await api(path, { method: 'POST', body: { reason: reason || undefined } });
      toast(done.status === 'approved' ? `Approved: gate ${r.gate} ${r.state === 'open' ? 'opened' : 'closed'}`
        : done.status === 'pending' ? `Approval recorded (${done.approvals.length} of ${done.required})`
          : `Request ${done.status}`, done.status === 'approved' ? 'good' : 'info');
      await after();
    },
  });
}

function actions(r, after) {
  const may = r.youMay || {};
  const button = (how, label, cls) => h('button', {
    type: 'button', class: `small ${cls}`, 'data-action': how, 'data-approval': r.id, onclick: () => decide(r, how, after),
  }, label);
  return h('span', { class: 'actions' },
    may.approve ? button('approve', 'Approve…', 'primary') : null,
    may.reject ? button('reject', 'Reject…', 'danger') : null,
    may.cancel ? button('cancel', 'Cancel…', '') : null);
}

function draw(main, pending, recent, refresh) {
  replace(main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Approvals')),
    h('p', { class: 'lead' }, 'Overrides through gates with spec.approval wait here until other people approve them. Pending requests never reach a spoke.'),
    h('section', { class: 'card', id: 'pending-approvals' },
      h('h2', {}, `Pending approvals (${pending.length})`),
      pending.length ? h('table', { class: 'plain', id: 'approvals-table' },
        h('thead', {}, h('tr', {}, ...['State', 'Gate', 'Clusters', 'For', 'Requested by', 'Reason', 'Ticket', 'Approvals', 'Expires', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, ...pending.map((r) => h('tr', { 'data-approval': r.id },
          h('td', {}, badge(r.state, r.state)), h('td', {}, h('a', { href: `#/gates/${enc(r.gate)}` }, r.gate)),
          h('td', {}, scopeText(r)), h('td', {}, r.for || 'until cancelled'),
          h('td', { class: 'requester' }, r.requester), h('td', { class: 'reason' }, r.reason), h('td', {}, r.ticket || '—'),
          h('td', { title: r.approvals.map((a) => `${a.approver} ${fmtTime(a.at)}`).join('\n') }, `${r.approvals.length} of ${r.required}`),
          h('td', {}, fmtTime(r.expiresAt), ' ', h('span', { class: 'muted' }, relTime(r.expiresAt))),
          h('td', {}, actions(r, refresh))))))
        : h('p', { class: 'muted' }, 'Nothing waits for approval.')),
    h('section', { class: 'card', id: 'decided-approvals' },
      h('h2', {}, 'Recently decided'),
      recent.length ? h('table', { class: 'plain' },
        h('thead', {}, h('tr', {}, ...['Outcome', 'Gate', 'State', 'Requested by', 'Reason', 'Decided by', 'When', 'Why'].map((t) => h('th', {}, t)))),
        h('tbody', {}, ...recent.map((r) => h('tr', { 'data-approval': r.id },
          h('td', {}, badge(r.status === 'approved' ? 'open' : 'closed', r.status)),
          h('td', {}, h('a', { href: `#/gates/${enc(r.gate)}` }, r.gate)), h('td', {}, r.state),
          h('td', {}, r.requester), h('td', { class: 'reason' }, r.reason), h('td', {}, r.decidedBy || '—'),
          h('td', {}, r.decidedAt ? fmtTime(r.decidedAt) : '—'), h('td', { class: 'reason' }, r.decisionReason || '')))))
        : h('p', { class: 'muted' }, 'None yet.')));
}
