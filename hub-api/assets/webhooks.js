// Webhooks page (admins): every subscription with its state, a test message,
// its recent deliveries (state, attempts, last status) and each delivery's
// attempts, with redeliver (same webhook-id); below, the admission webhooks
// (admission.js).

import { api, enc } from './api.js';
import { h, replace, fmtTime, relTime, badge, toast } from './dom.js';
import { admissionSection } from './admission.js';

export async function renderWebhooks(main) {
  const list = h('div', { id: 'webhooks-list' });
  const detail = h('div', { id: 'webhook-detail' });
  const admission = admissionSection();
  replace(main, h('div', { class: 'page-head' }, h('h1', {}, 'Webhooks')),
    h('p', { class: 'muted' }, 'Subscriptions to gate, override, calendar and other events; create and change them with `fleetgate webhook` or /api/v1/webhooks.'),
    list, detail, admission.section);
  let selected = null;

  async function refresh() {
    const hooks = await api('/api/v1/webhooks');
    drawList(hooks);
    if (selected && hooks.some((w) => w.spec.name === selected)) await showDeliveries(selected);
    else replace(detail);
  }

  function drawList(hooks) {
    if (!hooks.length) {
      replace(list, h('p', { class: 'empty' }, 'No webhook subscriptions.'));
      return;
    }
    replace(list, h('table', { class: 'plain', id: 'webhooks-table' },
      h('thead', {}, h('tr', {}, ...['Name', 'URL', 'Events', 'Format', 'State', ''].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...hooks.map((w) => h('tr', { 'data-webhook': w.spec.name },
        h('td', {}, h('strong', {}, w.spec.name)), h('td', { class: 'reason' }, w.spec.url),
        h('td', {}, w.spec.events.length ? w.spec.events.join(', ') : 'all'), h('td', {}, w.spec.format),
        h('td', {}, state(w)),
        h('td', { class: 'nowrap' },
          h('button', { type: 'button', class: 'test', onclick: () => test(w.spec.name) }, 'Send test'), ' ',
          h('button', { type: 'button', class: 'deliveries', onclick: () => { selected = w.spec.name; showDeliveries(w.spec.name).catch(err); } }, 'Deliveries'), ' ',
          h('button', { type: 'button', class: w.spec.enabled ? 'disable' : 'enable', onclick: () => setEnabled(w.spec.name, !w.spec.enabled) },
            w.spec.enabled ? 'Disable' : 'Enable')))))));
  }

  // Only the flag changes (POST …/enable|disable, not a replace); enabling
  // clears the hub's disable reason and sends what waited.
  async function setEnabled(name, on) {
    try {
      await api(`/api/v1/webhooks/${enc(name)}/${on ? 'enable' : 'disable'}`, { method: 'POST' });
      toast(`Webhook ${name} ${on ? 'enabled' : 'disabled'}`, 'info');
      await refresh();
    } catch (e) { err(e); }
  }

  async function test(name) {
    try {
      const r = await api(`/api/v1/webhooks/${enc(name)}/test`, { method: 'POST' });
      toast(r.ok ? `Test to ${name}: HTTP ${r.status} in ${r.latencyMs} ms` : `Test to ${name} failed: ${r.error}`, r.ok ? 'good' : 'bad');
    } catch (e) { err(e); }
  }

  async function showDeliveries(name) {
    const items = await api(`/api/v1/webhooks/${enc(name)}/deliveries`, { query: { limit: 50 } });
    replace(detail, h('section', { class: 'card', id: 'deliveries' },
      h('h2', {}, `Deliveries of ${name} (newest first)`),
      items.length ? h('table', { class: 'plain', id: 'deliveries-table' },
        h('thead', {}, h('tr', {}, ...['Id', 'Event', 'Subject', 'State', 'Attempts', 'Last status', 'Created', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, ...items.map((d) => h('tr', { 'data-delivery': d.id, 'data-state': d.state },
          h('td', {}, String(d.id)), h('td', {}, h('code', {}, d.eventType)), h('td', {}, d.subject),
          h('td', {}, badge(d.state === 'delivered' ? 'open' : d.state === 'failed' ? 'closed' : 'waiting', d.state)),
          h('td', {}, String(d.attempts)),
          h('td', { class: 'reason' }, d.lastStatus ? `HTTP ${d.lastStatus}` : '',
            d.lastError && d.lastError !== `HTTP ${d.lastStatus}` ? ` ${d.lastError}` : ''),
          h('td', {}, fmtTime(d.createdAt), ' ', h('span', { class: 'muted' }, relTime(d.createdAt))),
          h('td', { class: 'nowrap' },
            h('button', { type: 'button', class: 'attempts', onclick: () => attempts(name, d.id).catch(err) }, 'Attempts'), ' ',
            h('button', { type: 'button', class: 'redeliver', onclick: () => redeliver(name, d.id) }, 'Redeliver'))))))
        : h('p', { class: 'empty' }, 'No deliveries yet.'),
      h('div', { id: 'attempts' })));
  }

  async function attempts(name, id) {
    const d = await api(`/api/v1/webhooks/${enc(name)}/deliveries/${id}`);
    replace(detail.querySelector('#attempts'), h('h3', {}, `Attempts of delivery ${id} (webhook-id ${d.messageId})`),
      h('table', { class: 'plain', id: 'attempts-table' },
        h('thead', {}, h('tr', {}, ...['#', 'At', 'Replica', 'Status', 'Latency', 'Error', 'Response'].map((t) => h('th', {}, t)))),
        h('tbody', {}, ...(d.attemptLog || []).map((a) => h('tr', {},
          h('td', {}, String(a.attempt)), h('td', {}, fmtTime(a.at, undefined, true)), h('td', {}, a.replica),
          h('td', {}, a.status ? String(a.status) : '—'), h('td', {}, `${a.latencyMs} ms`),
          h('td', { class: 'reason' }, a.error || ''), h('td', { class: 'reason' }, a.responseExcerpt || ''))))));
  }

  async function redeliver(name, id) {
    try {
      await api(`/api/v1/webhooks/${enc(name)}/deliveries/${id}/redeliver`, { method: 'POST' });
      toast(`Delivery ${id} queued again`, 'info');
      await showDeliveries(name);
    } catch (e) { err(e); }
  }

  const err = (e) => toast(`${e.field ? `${e.field}: ` : ''}${e.message}`, 'bad');
  await Promise.all([refresh(), admission.refresh()]);
  return { refresh };
}

function state(w) {
  if (!w.spec.enabled) return badge('closed', w.disabledReason ? `disabled: ${w.disabledReason}` : 'disabled');
  if (w.failingSince) return badge('held', `failing since ${fmtTime(w.failingSince)}`);
  return badge('open', 'enabled');
}
