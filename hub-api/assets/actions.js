// Operator actions — open for a duration, close now, cancel an override —
// each behind a confirmation dialog that names what will happen. Viewers get
// no buttons (the API would refuse them anyway: 403).

import { api, enc, ApiError } from './api.js';
import { h, replace, toast, fmtTime } from './dom.js';

/**
 * Shows the confirmation dialog. fields: {duration: {value, required, hint}}
 * and a reason (unless `reason: false`, for calls that take none). onConfirm({duration,
 * reason}) does the call; its error is shown in the dialog, success closes it.
 */
export function confirmDialog({ title, text, confirmLabel, kind = 'primary', duration, reason: askReason = true, reasonRequired = true, ticket: askTicket = false, emergency: askEmergency = false, onConfirm }) {
  const dlg = document.getElementById('dialog');
  const err = h('p', { class: 'form-error', id: 'dlg-error', role: 'alert' });
  const dur = duration ? h('input', {
    id: 'dlg-duration', type: 'text', value: duration.value || '', placeholder: duration.placeholder || '1h',
    required: duration.required || false, autocomplete: 'off',
  }) : null;
  const reason = askReason ? h('textarea', { id: 'dlg-reason', rows: 3, required: reasonRequired, placeholder: reasonRequired ? 'Why? (recorded in the audit log)' : 'Why? (optional, recorded in the audit log)' }) : null;
  const ticket = askTicket ? h('input', { id: 'dlg-ticket', type: 'text', autocomplete: 'off', placeholder: 'e.g. CHG0031337 (optional)' }) : null;
  const emergency = askEmergency ? h('input', { id: 'dlg-emergency', type: 'checkbox' }) : null;
  const confirm = h('button', { type: 'submit', class: kind, id: 'dlg-confirm' }, confirmLabel);
  const cancel = h('button', { type: 'button', id: 'dlg-cancel', onclick: () => dlg.close() }, 'Cancel');
  const form = h('form', { class: 'dialog-form' },
    h('h2', {}, title), h('p', {}, text),
    dur ? [h('label', { for: 'dlg-duration' }, 'For how long (e.g. 1h, 90m, 2h30m)'), dur, duration.hint ? h('p', { class: 'hint' }, duration.hint) : null] : null,
    reason ? [h('label', { for: 'dlg-reason' }, 'Reason'), reason] : null,
    ticket ? [h('label', { for: 'dlg-ticket' }, 'Change ticket'), ticket] : null,
    emergency ? h('label', { for: 'dlg-emergency', class: 'check' }, emergency, ' Emergency (break-glass): skip the gate\'s approval; marked in the audit log') : null, err,
    h('div', { class: 'buttons' }, cancel, confirm));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    confirm.disabled = true;
    err.textContent = '';
    try {
      await onConfirm({
        duration: dur ? dur.value.trim() : '', reason: reason ? reason.value.trim() : '',
        ticket: ticket && ticket.value.trim() ? ticket.value.trim() : undefined,
        emergency: emergency ? emergency.checked : undefined,
      });
      dlg.close();
    } catch (e) {
      err.textContent = e instanceof ApiError ? `${e.field ? `${e.field}: ` : ''}${e.message}` : String(e.message || e);
    } finally {
      confirm.disabled = false;
    }
  });
  replace(dlg, form);
  dlg.showModal();
  (dur || reason || confirm).focus();
}

/** "on cluster x" / "on all 12 clusters in its scope". */
function where(cluster, count) {
  if (cluster) return `on cluster ${cluster} only`;
  return `on all ${count ?? ''} clusters in its scope`.replace('  ', ' ');
}

/** Open / close buttons for a gate (whole scope, or one cluster); `may` is
 * the hub's answer whether the caller may operate it there (its role and scope). */
export function gateActions(gate, ctx, { cluster, count, after, may = true } = {}) {
  if (!ctx.canAct || !may) return null;
  const clusters = cluster ? { names: [cluster] } : undefined;
  const open = () => confirmDialog({
    title: `Open gate ${gate}`,
    text: `Changes will flow ${where(cluster, count)} until the override expires, whatever the schedule says.`,
    confirmLabel: 'Open gate', kind: 'primary',
    duration: { value: '1h', required: true },
    ticket: true, emergency: ctx.me && ctx.me.role === 'admin',
    onConfirm: async ({ duration, reason, ticket, emergency }) => {
      const o = await api(`/api/v1/gates/${enc(gate)}/open`, { method: 'POST', body: { for: duration, reason, clusters, ticket, emergency: emergency || undefined } });
      toastOutcome(o, gate, cluster, 'opened');
      await after?.();
    },
  });
  const close = () => confirmDialog({
    title: `Close gate ${gate} now`,
    text: `Flux objects it governs will be suspended ${where(cluster, count)}; new changes wait until it opens.`,
    confirmLabel: 'Close gate', kind: 'danger',
    duration: { value: '', required: false, placeholder: 'until cancelled', hint: 'Leave empty to keep it closed until the override is cancelled.' },
    ticket: true, emergency: ctx.me && ctx.me.role === 'admin',
    onConfirm: async ({ duration, reason, ticket, emergency }) => {
      const o = await api(`/api/v1/gates/${enc(gate)}/close`, { method: 'POST', body: { for: duration || undefined, reason, clusters, ticket, emergency: emergency || undefined } });
      toastOutcome(o, gate, cluster, 'closed');
      await after?.();
    },
  });
  const suffix = cluster ? `-${cluster}` : '';
  return h('span', { class: 'actions' },
    h('button', { type: 'button', class: 'primary', id: `open-gate${suffix}`, 'data-action': 'open', 'data-gate': gate, onclick: open }, 'Open for…'),
    h('button', { type: 'button', class: 'danger', id: `close-gate${suffix}`, 'data-action': 'close', 'data-gate': gate, onclick: close }, 'Close now'));
}

/** What opening or closing did: the override, or a request waiting for approval. */
function toastOutcome(o, gate, cluster, verb) {
  if (o.status === 'pending') {
    toast(`Request ${o.id.slice(0, 8)} to ${verb === 'opened' ? 'open' : 'close'} gate ${gate} waits for ${o.required} approval(s): see Approvals`, 'info');
    return;
  }
  const until = o.expiresAt ? ` until ${fmtTime(o.expiresAt)}` : '';
  toast(`Gate ${gate} ${verb}${cluster ? ` on ${cluster}` : ''}${until}${o.emergency ? ' (EMERGENCY: approval skipped)' : ''}`, verb === 'opened' ? 'good' : 'info');
}

/** The cancel button of an override (`may`: as for gateActions). */
export function cancelAction(o, ctx, after, may = true) {
  if (!ctx.canAct || !may) return null;
  return h('button', {
    type: 'button', class: 'small', 'data-action': 'cancel', 'data-override': o.id,
    onclick: () => confirmDialog({
      title: `Cancel the ${o.state} override on ${o.gate}`,
      text: `Made by ${o.actor}: “${o.reason}”. The gate goes back to its schedule at once.`,
      confirmLabel: 'Cancel override', kind: 'danger',
      onConfirm: async ({ reason }) => {
        await api(`/api/v1/overrides/${enc(o.id)}`, { method: 'DELETE', query: { reason } });
        toast(`Override on ${o.gate} cancelled`, 'info');
        await after?.();
      },
    }),
  }, 'Cancel…');
}
