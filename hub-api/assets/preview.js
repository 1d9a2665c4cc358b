// Impact preview (admins): paste a Gate manifest, or open a gate's own manifest from its page
// (#/preview/NAME), and see what applying it would do — the hub's dry run
// (POST /api/v1/gates?dryRun=true, or PUT /api/v1/gates/NAME?dryRun=true for a replace):
// clusters added and removed, each one's state now and next change, its rollout wave, and the
// Flux objects it would govern and hold now. Nothing is written or audited by the preview;
// "Apply…" then writes exactly the manifest previewed, through the same REST call as
// `fleetgate gate apply` (create, or replace with If-Match: the version previewed), behind a
// confirmation asking why; the hub decides who may and audits it.

import { api, enc, ApiError } from './api.js';
import { h, replace, fmtTime, badge, toYaml, toast } from './dom.js';
import { confirmDialog } from './actions.js';

export async function renderPreview(main, ctx, name) {
  let text = '';
  if (name) {
    const g = await api(`/api/v1/gates/${enc(name)}`);
    text = `${toYaml(g.manifest).trimStart()}\n`;
  }
  const area = h('textarea', {
    id: 'preview-manifest', rows: 18, spellcheck: 'false',
    placeholder: 'apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: …}\nspec: …',
  });
  area.value = text;
  const error = h('p', { class: 'form-error', id: 'preview-error', role: 'alert' });
  const result = h('div', { id: 'preview-result' });
  const run = h('button', { type: 'submit', class: 'primary', id: 'preview-run' }, 'Preview');
  const form = h('form', { class: 'card', id: 'preview-form' },
    h('h2', {}, name ? `Preview a change of gate ${name}` : 'Preview a gate manifest'),
    h('p', { class: 'muted' }, 'Paste a Gate manifest (YAML or JSON). The hub checks it exactly like an apply and answers what it would do now: nothing is written, nothing audited. Then Apply it here (asked to confirm, audited), or with ',
      h('code', {}, 'fleetgate gate apply -f FILE'), '.'),
    h('label', { for: 'preview-manifest' }, 'Manifest'), area, error, run);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    run.disabled = true;
    error.textContent = '';
    try {
      const manifest = area.value;
      const impact = await dryRun(manifest, name);
      replace(result, impactView(impact), applyButton(impact, manifest, area));
    } catch (e) {
      replace(result);
      error.textContent = e instanceof ApiError ? `${e.message}${e.field ? ` (${e.field})` : ''}` : String(e.message || e);
    } finally {
      run.disabled = false;
    }
  });
  replace(main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Impact preview'),
      name ? h('a', { href: `#/gates/${enc(name)}` }, `back to gate ${name}`) : null),
    ctx.me.role === 'admin' ? form : h('p', { class: 'muted' }, 'Only admins write gates, so only they preview a change.'),
    result);
  // Nothing here follows the fleet: a live event must not redraw the page (it
  // re-rendered it, and the manifest being typed and the preview shown were lost).
  return { refresh: async () => {} };
}

/**
 * "Apply…" for a previewed create or replace: writes the manifest previewed (not later edits:
 * those need a new preview), with the stored version previewed as If-Match, so a gate changed
 * meanwhile is refused (412) instead of overwritten. An unchanged manifest has nothing to apply.
 */
function applyButton(impact, manifest, area) {
  if (impact.action === 'unchanged') return h('p', { class: 'muted', id: 'preview-unchanged' }, 'Same as the stored gate: nothing to apply.');
  const create = impact.action === 'create';
  const go = () => {
    if (area.value !== manifest) {
      toast('The manifest changed since the preview: preview it again first', 'bad');
      return;
    }
    confirmDialog({
      title: `${create ? 'Create' : 'Replace'} gate ${impact.gate}`,
      text: `Applies the manifest just previewed: ${impact.counts.clusters} cluster(s), ${impact.counts.closed} closed now, `
        + `${impact.counts.wouldHold} object(s) held now${impact.enforcement === 'warn' ? ' once enforced (warn mode holds nothing)' : ''}. Recorded in the audit log.`,
      confirmLabel: create ? 'Create gate' : 'Replace gate', kind: 'primary', reasonRequired: false,
      onConfirm: async ({ reason }) => {
        const raw = { type: 'application/yaml', text: manifest };
        const query = { reason: reason || undefined };
        const g = create
          ? await api('/api/v1/gates', { method: 'POST', raw, query })
          : await api(`/api/v1/gates/${enc(impact.gate)}`, { method: 'PUT', raw, query, ifMatch: impact.storedVersion });
        toast(`gate/${impact.gate} ${create ? 'created' : 'replaced'} (version ${g.version})`, 'good');
        window.location.hash = `#/gates/${enc(impact.gate)}`;
      },
    });
  };
  return h('div', { class: 'buttons', id: 'preview-apply-row' },
    h('button', { type: 'button', class: 'primary', id: 'preview-apply', onclick: go }, `Apply (${impact.action})…`));
}

/** The dry run as the CLI does it: a create, or a replace when the gate exists. */
async function dryRun(manifest, name) {
  const query = { dryRun: 'true' };
  const raw = { type: 'application/yaml', text: manifest };
  if (name) return api(`/api/v1/gates/${enc(name)}`, { method: 'PUT', raw, query });
  try {
    return await api('/api/v1/gates', { method: 'POST', raw, query });
  } catch (e) {
    // The gate exists: preview the replace of the gate the manifest names (the hub refuses a
    // name that does not match the manifest's, so a wrong guess here changes nothing).
    const m = e instanceof ApiError && e.status === 409 && /'([^']+)' already exists/.exec(e.message);
    if (!m) throw e;
    return api(`/api/v1/gates/${enc(m[1])}`, { method: 'PUT', raw, query });
  }
}

function impactView(i) {
  const c = i.counts;
  const rollout = (i.waves || []).length > 0;
  const head = ['Cluster', 'Change', 'State now', ...(rollout ? ['Wave'] : []), 'Governed', 'Would hold', 'Next change', 'Reason'];
  const rows = i.clusters.map((k) => {
    const known = k.inventoryReported || k.change === 'removed';
    const next = k.transitions[0];
    return h('tr', { 'data-cluster': k.cluster },
      h('td', {}, h('a', { href: `#/clusters/${enc(k.cluster)}` }, k.cluster)),
      h('td', { class: 'change' }, k.change),
      h('td', { class: 'state', 'data-state': k.state || 'none' }, k.state ? badge(k.state === 'open' ? 'good' : 'bad', k.state) : '–'),
      ...(rollout ? [h('td', { class: 'wave' }, k.wave ? `${k.wave} ${k.waveName}` : '–')] : []),
      h('td', { class: 'governed' }, known ? String(k.governed.length) : '?'),
      h('td', { class: 'would-hold' }, known ? String(k.wouldHold.length) : '?'),
      h('td', {}, k.change === 'removed' ? '' : next ? `${next.state} ${fmtTime(next.at)}` : 'none in 7 days'),
      h('td', { class: 'reason' }, k.reason));
  });
  const held = i.clusters.flatMap((k) => k.wouldHold.map((o) => h('li', {}, `${k.cluster}: ${o.kind} ${o.namespace}/${o.name}`)));
  const unknown = i.clusters.filter((k) => !k.inventoryReported && k.change !== 'removed').map((k) => k.cluster);
  return h('section', { class: 'card', id: 'impact', 'data-action': i.action },
    h('h2', {}, `gate/${i.gate}: ${i.action} (dry run, ${i.enforcement})`),
    h('p', { id: 'impact-summary' },
      `${c.clusters} clusters (${c.closed} closed now; +${i.added.length} added, −${i.removed.length} removed), would govern ${c.governed} objects and hold ${c.wouldHold} now`,
      i.enforcement === 'warn' ? ' — a warn gate holds nothing; this is what it would hold once enforced' : ''),
    (i.warnings || []).length ? h('ul', { class: 'warnings' }, ...i.warnings.map((w) => h('li', {}, `${w.path}: ${w.message}`))) : null,
    i.clusters.length
      ? h('table', { class: 'plain', id: 'impact-clusters' }, h('thead', {}, h('tr', {}, ...head.map((t) => h('th', {}, t)))), h('tbody', {}, ...rows))
      : h('p', { class: 'muted' }, 'No cluster in scope.'),
    rollout ? h('div', {}, h('h3', {}, 'Rollout waves (estimated at the next opening, every wave healthy)'),
      h('ol', { id: 'impact-waves' }, ...i.waves.map((w) => h('li', { 'data-wave': w.wave },
        `${w.name}: ${w.clusters.length ? w.clusters.join(', ') : '(no cluster)'} — `,
        w.estimatedReleaseAt ? `${w.afterClose ? 'after the gate closes again, ' : 'release '}~${fmtTime(w.estimatedReleaseAt)}` : 'no opening in 7 days',
        w.approval ? ', needs approval' : '')))) : null,
    held.length ? h('div', {}, h('h3', {}, 'Would hold now'), h('ul', { id: 'impact-held' }, ...held)) : null,
    unknown.length ? h('p', { class: 'muted' }, `No inventory reported yet (spoke offline or older): ${unknown.join(', ')}`) : null);
}
