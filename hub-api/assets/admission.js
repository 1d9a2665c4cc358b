// Admission webhooks, a section of the Webhooks page (unscoped admins): the
// change-ticket checks the hub calls before it accepts an override (and, if they
// subscribe, an approval), each with its operations, timeout, failure policy and
// whether it trusts its own CA bundle. The form creates or replaces one (PUT
// /api/v1/admission-webhooks/NAME; a bad field comes back named), Edit fills the form
// from a row, Delete… removes one. Every change is audited by the hub.

import { api, enc, ApiError } from './api.js';
import { h, replace, toast, fmtTime } from './dom.js';
import { confirmDialog } from './actions.js';

export function admissionSection() {
  const section = h('section', { class: 'card', id: 'admission-webhooks' });

  async function refresh() {
    let hooks;
    try {
      hooks = await api('/api/v1/admission-webhooks');
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 403) throw e;
      replace(section, h('h2', {}, 'Admission webhooks'),
        h('p', { class: 'muted' }, 'Only an unscoped admin configures admission webhooks.'));
      return;
    }
    draw(hooks);
  }

  function draw(hooks) {
    const form = editor(refresh);
    replace(section,
      h('h2', {}, 'Admission webhooks (change tickets)'),
      h('p', { class: 'muted' }, 'Asked synchronously before an override (and, if chosen, an approval) is accepted; a denial answers 403 naming the ticket. Also `fleetgate admission-webhook`.'),
      hooks.length ? h('table', { class: 'plain', id: 'admission-table' },
        h('thead', {}, h('tr', {}, ...['Name', 'URL', 'Operations', 'Timeout', 'Failure policy', 'CA bundle', 'Updated', ''].map((t) => h('th', {}, t)))),
        h('tbody', {}, ...hooks.map((w) => h('tr', { 'data-admission': w.name },
          h('td', {}, h('strong', {}, w.name)), h('td', { class: 'reason' }, w.url),
          h('td', {}, w.operations.join(', ')), h('td', {}, w.timeout || '5s'), h('td', {}, w.failurePolicy),
          h('td', {}, w.caBundle ? 'own' : '—'), h('td', {}, fmtTime(w.updatedAt)),
          h('td', { class: 'nowrap' },
            h('button', { type: 'button', class: 'small edit', onclick: () => form.fill(w) }, 'Edit'), ' ',
            h('button', { type: 'button', class: 'small danger delete', onclick: () => remove(w.name, refresh) }, 'Delete…'))))))
        : h('p', { class: 'empty' }, 'No admission webhooks: overrides need no change ticket.'),
      form.el);
  }

  return { section, refresh };
}

function remove(name, after) {
  confirmDialog({
    title: `Delete admission webhook ${name}`,
    text: 'Overrides are no longer checked against it.',
    confirmLabel: 'Delete', kind: 'danger', reason: false,
    onConfirm: async () => {
      await api(`/api/v1/admission-webhooks/${enc(name)}`, { method: 'DELETE' });
      toast(`Admission webhook ${name} deleted`, 'info');
      await after();
    },
  });
}

/** The create-or-replace form. */
function editor(after) {
  const input = (id, attrs = {}) => h('input', { id, type: 'text', autocomplete: 'off', ...attrs });
  const name = input('adm-name', { placeholder: 'servicenow', required: true });
  const url = input('adm-url', { placeholder: 'https://change-adapter.example.com/fleetgate', required: true });
  const opOverride = h('input', { id: 'adm-op-override', type: 'checkbox', checked: true });
  const opApproval = h('input', { id: 'adm-op-approval', type: 'checkbox' });
  const timeout = input('adm-timeout', { placeholder: '5s' });
  const policy = h('select', { id: 'adm-policy' }, h('option', { value: 'Fail' }, 'Fail (deny when it cannot answer)'),
    h('option', { value: 'Ignore' }, 'Ignore (allow when it cannot answer)'));
  const ca = h('textarea', { id: 'adm-ca', rows: 3, placeholder: '-----BEGIN CERTIFICATE----- (optional)' });
  const err = h('p', { class: 'form-error', id: 'adm-error', role: 'alert' });
  const save = h('button', { type: 'submit', class: 'primary', id: 'adm-save' }, 'Save admission webhook');
  const el = h('form', { class: 'dialog-form', id: 'admission-form' },
    h('h3', {}, 'Add or replace'),
    h('label', { for: 'adm-name' }, 'Name'), name, h('label', { for: 'adm-url' }, 'URL'), url,
    h('label', { class: 'check' }, opOverride, ' Ask about overrides'), h('label', { class: 'check' }, opApproval, ' Ask about approvals'),
    h('label', { for: 'adm-timeout' }, 'Timeout (at most 30s)'), timeout, h('label', { for: 'adm-policy' }, 'Failure policy'), policy,
    h('label', { for: 'adm-ca' }, 'CA bundle (PEM)'), ca, err, h('div', { class: 'buttons' }, save));
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    save.disabled = true;
    err.textContent = '';
    try {
      const body = {
        url: url.value.trim(),
        operations: [opOverride.checked ? 'override' : null, opApproval.checked ? 'approval' : null].filter(Boolean),
        timeout: timeout.value.trim() || undefined, failurePolicy: policy.value, caBundle: ca.value.trim() || undefined,
      };
      const w = await api(`/api/v1/admission-webhooks/${enc(name.value.trim())}`, { method: 'PUT', body });
      toast(`Admission webhook ${w.name} saved`, 'good');
      await after();
    } catch (e) {
      err.textContent = e instanceof ApiError ? `${e.field ? `${e.field}: ` : ''}${e.message}` : String(e.message || e);
    } finally {
      save.disabled = false;
    }
  });
  const fill = (w) => {
    name.value = w.name; url.value = w.url; timeout.value = w.timeout || ''; policy.value = w.failurePolicy;
    opOverride.checked = w.operations.includes('override'); opApproval.checked = w.operations.includes('approval');
    ca.value = w.caBundle || '';
    url.focus();
  };
  return { el, fill };
}
