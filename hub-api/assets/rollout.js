// Gate page: the gate's rollout — its waves with their clusters (waiting,
// released, healthy, failed, unknown), the soak countdown or health deadline,
// the failing objects with their Ready message, and for operators the buttons
// Pause / Resume / Abort / Release next (the API enforces the role too).

import { api, enc } from './api.js';
import { h, fmtTime, relTime, badge, toast } from './dom.js';
import { confirmDialog } from './actions.js';

// A cluster's health as people read it: not released yet is "waiting".
const HEALTH = {
  closed: ['waiting', 'waiting'],
  progressing: ['info', 'released'],
  healthy: ['open', 'healthy'],
  failed: ['offline', 'failed'],
  unknown: ['closed', 'unknown (spoke offline)'],
};

const STATE = { running: 'info', paused: 'held', halted: 'offline', aborted: 'closed', completed: 'open', ended: 'closed' };

/** The rollout card of gate page `d` (null without a rollout). */
export function rolloutCard(r, ctx, refresh) {
  if (!r) return null;
  const waves = r.waves.length;
  const wave = Math.min(r.wave, waves);
  return h('section', { class: 'card rollout', id: 'rollout', 'data-state': r.state },
    h('div', { class: 'page-head' },
      h('h2', {}, 'Rollout'),
      h('span', { id: 'rollout-state' }, badge(STATE[r.state] || 'info', r.state)),
      h('span', { class: 'muted' }, `wave ${wave} of ${waves} · started ${fmtTime(r.startedAt)}`,
        r.endedAt ? ` · ended ${fmtTime(r.endedAt)}` : ''),
      h('span', { class: 'spacer' }),
      rolloutActions(r, ctx, refresh)),
    r.detail ? h('p', { class: 'rollout-detail', id: 'rollout-detail', role: 'status' }, r.detail) : null,
    countdown(r),
    wavesTable(r));
}

/** What the rollout waits for now, with a live countdown. */
function countdown(r) {
  const live = r.state === 'running' || r.state === 'paused';
  let text = null;
  let at = null;
  if (live && r.waitingForApproval) {
    text = `Wave ${r.wave} waits for an operator's Release next.`;
  } else if (live && r.soakUntil) {
    text = `Wave ${r.wave} is healthy and soaking: the next wave is released`;
    at = r.soakUntil;
  } else if (live && r.healthDeadline) {
    text = `Wave ${r.wave} must be healthy by`;
    at = r.healthDeadline;
  }
  if (!text) return null;
  const rel = h('span', { class: 'muted', 'data-countdown': at || '' }, at ? relTime(at) : '');
  const p = h('p', { class: 'rollout-countdown', id: 'rollout-countdown' }, text,
    at ? [' ', h('strong', {}, fmtTime(at, undefined, true)), ' (', rel, ')'] : null,
    r.state === 'paused' ? ' — paused: nothing is released until resumed.' : '');
  if (at) {
    const timer = setInterval(() => {
      if (!document.contains(rel)) clearInterval(timer);
      else rel.textContent = relTime(at);
    }, 10000);
  }
  return p;
}

function wavesTable(r) {
  const rows = [];
  for (const w of r.waves) {
    const clusters = w.clusters.length ? w.clusters : [null];
    clusters.forEach((c, i) => {
      const waveCells = i === 0 ? [
        h('td', { rowspan: clusters.length, class: 'nowrap' }, h('strong', {}, `${w.index}. ${w.name}`), w.approval ? h('div', { class: 'muted' }, 'needs approval') : null),
        h('td', { rowspan: clusters.length, 'data-wave-state': w.state }, waveState(w)),
      ] : [];
      if (!c) {
        rows.push(h('tr', { 'data-wave': w.index }, ...waveCells, h('td', { colspan: 4, class: 'muted' }, 'no cluster')));
        return;
      }
      const [kind, word] = HEALTH[c.health] || ['info', c.health];
      rows.push(h('tr', { 'data-wave': w.index, 'data-rollout-cluster': c.name, 'data-health': c.health },
        ...waveCells,
        h('td', {}, h('a', { href: `#/clusters/${enc(c.name)}` }, c.name),
          c.late ? h('span', { class: 'chip' }, 'joined late') : null,
          c.bypass ? h('span', { class: 'chip' }, 'opened by override') : null),
        h('td', {}, badge(kind, word)),
        h('td', { class: 'nowrap' }, c.releasedAt ? fmtTime(c.releasedAt) : '—'),
        h('td', { class: 'ready' }, c.detail ? h('div', { class: 'ready-message' }, c.detail) : '')));
    });
  }
  return h('table', { class: 'plain', id: 'rollout-waves' },
    h('thead', {}, h('tr', {}, ...['Wave', 'State', 'Cluster', 'Health', 'Released', 'Why not healthy'].map((t) => h('th', {}, t)))),
    h('tbody', {}, ...rows));
}

function waveState(w) {
  const words = {
    done: ['open', 'done'], released: ['info', 'released'], soaking: ['open', 'soaking'],
    'waiting-approval': ['waiting', 'waits for approval'], next: ['waiting', 'next'],
    pending: ['closed', 'pending'], failed: ['offline', 'failed'],
  };
  const [kind, word] = words[w.state] || ['info', w.state];
  return [badge(kind, word), w.estimatedReleaseAt
    ? h('div', { class: 'muted', title: 'An estimate: every earlier wave healthy at once, soaks added up' },
      `est. ${fmtTime(w.estimatedReleaseAt)}`)
    : null];
}

// Which commands the rollout's state admits (the API answers 409 otherwise).
const COMMANDS = [
  { cmd: 'pause', label: 'Pause', when: (r) => r.state === 'running', kind: '',
    text: 'No further wave is released or advanced until it is resumed (a failure still halts it).' },
  { cmd: 'resume', label: 'Resume', when: (r) => r.state === 'paused' || r.state === 'halted', kind: 'primary',
    text: 'The rollout continues; a halted wave is judged afresh from now.' },
  { cmd: 'release-next', label: 'Release next', when: (r) => r.state === 'running' && (r.waitingForApproval || !!r.soakUntil), kind: 'primary',
    text: 'Approves the wave waiting for approval, or ends the current soak: the next wave opens now.' },
  { cmd: 'abort', label: 'Abort', when: (r) => ['running', 'paused', 'halted'].includes(r.state), kind: 'danger',
    text: 'The remaining waves stay closed until the gate opens anew; released clusters stay open.' },
];

function rolloutActions(r, ctx, refresh) {
  if (!ctx.canAct) return null;
  return h('span', { class: 'actions' }, ...COMMANDS.map((c) => h('button', {
    type: 'button', class: c.kind || undefined, id: `rollout-${c.cmd}`, 'data-action': `rollout-${c.cmd}`,
    disabled: !c.when(r), title: c.when(r) ? c.text : `Not while the rollout is ${r.state}${c.cmd === 'release-next' ? ' (or its wave is not healthy yet)' : ''}`,
    onclick: () => confirmDialog({
      title: `${c.label} the rollout of gate ${r.gate}`,
      text: c.text,
      confirmLabel: c.label, kind: c.kind === 'danger' ? 'danger' : 'primary', reason: false,
      onConfirm: async () => {
        const after = await api(`/api/v1/gates/${enc(r.gate)}/rollout/${c.cmd}`, { method: 'POST' });
        toast(`Rollout of gate ${r.gate}: ${after.state}, wave ${Math.min(after.wave, after.waves.length)}`, 'info');
        await refresh?.();
      },
    }),
  }, c.label)));
}
