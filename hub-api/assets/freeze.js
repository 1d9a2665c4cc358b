// The emergency stop on every page: a banner while a fleet freeze is in force (who, why,
// until when, which clusters) and, for admins (a team's admin: its clusters), buttons to
// freeze the fleet and to unfreeze, each behind a confirmation dialog. The hub decides;
// operators and viewers get 403, so they are not offered the buttons.

import { api } from './api.js';
import { h, replace, toast, fmtTime } from './dom.js';
import { confirmDialog } from './actions.js';

function clustersText(f) {
  if (!f.clusters) return 'every cluster';
  const parts = [];
  if (f.clusters.names && f.clusters.names.length) parts.push(f.clusters.names.join(', '));
  if (f.clusters.selector) parts.push('clusters matching a selector');
  return parts.join(' and ');
}

/** Re-reads the freezes and redraws the banner and the header button. */
export async function renderFreeze(ctx) {
  const banner = document.getElementById('freeze-banner');
  const button = document.getElementById('freeze');
  const now = Date.now();
  const all = await api('/api/v1/freezes');
  const active = all.filter((f) => Date.parse(f.startsAt) <= now);
  const after = () => ctx.refresh();
  const mayFreeze = Boolean(ctx.me && ctx.me.role === 'admin');
  if (active.length === 0) {
    banner.hidden = true;
    replace(banner);
  } else {
    const lines = active.map((f) => h('p', { class: 'freeze-line', 'data-freeze': f.id },
      h('strong', {}, 'FROZEN'), ` ${clustersText(f)} by ${f.actor} until ${f.expiresAt ? fmtTime(f.expiresAt) : 'unfrozen'}: `,
      h('span', { class: 'freeze-reason' }, f.reason)));
    const unfreeze = mayFreeze ? h('button', {
      type: 'button', class: 'primary', id: 'unfreeze',
      onclick: () => confirmDialog({
        title: 'Unfreeze',
        text: `End ${active.length === 1 ? 'the freeze' : `all ${active.length} freezes`} you may end. Gates go back to their schedules and overrides; rollout gates reopen through their waves.`,
        confirmLabel: 'Unfreeze', kind: 'primary',
        onConfirm: async ({ reason }) => {
          const ended = await api('/api/v1/freezes/end', { method: 'POST', body: { reason } });
          toast(`Unfrozen (${ended.length} freeze${ended.length === 1 ? '' : 's'} ended)`, 'good');
          await after();
        },
      }),
    }, 'Unfreeze…') : null;
    replace(banner, h('div', { class: 'freeze-text' }, lines), unfreeze);
    banner.hidden = false;
  }
  button.hidden = !mayFreeze;
  button.onclick = () => confirmDialog({
    title: 'Freeze the fleet',
    text: 'Every gate on every cluster you may operate closes now, above every override; every Kustomization and HelmRelease no gate covers is suspended. Spokes enforce it offline too.',
    confirmLabel: 'Freeze now', kind: 'danger',
    duration: { value: '', required: false, placeholder: 'until unfrozen', hint: 'Leave empty to keep it until someone unfreezes.' },
    onConfirm: async ({ duration, reason }) => {
      await api('/api/v1/freezes', { method: 'POST', body: { reason, for: duration || undefined } });
      toast('Fleet frozen', 'bad');
      await after();
    },
  });
}
