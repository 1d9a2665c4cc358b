// The 7-day timeline of a gate as SVG: schedule bands (open / closed, named
// after the deciding window), live overrides below, day ticks in the gate's
// time zone (top) and the viewer's (bottom), and a marker for now.

import { s, viewerZone } from './dom.js';

const W = 1000;
const LEFT = 90;
const RIGHT = 10;

/** preview: {initial: {state, reason}, transitions: [{at, state, reason}]} */
export function timeline({ preview, overrides, gateZone, from, to }) {
  const t0 = from.getTime();
  const t1 = to.getTime();
  const x = (t) => LEFT + ((Math.min(Math.max(t, t0), t1) - t0) / (t1 - t0)) * (W - LEFT - RIGHT);
  const H = 150;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'timeline', role: 'img', 'aria-label': 'Gate schedule for the next 7 days' });

  // Bands: from the initial state through each transition.
  const bands = [];
  let cur = { start: t0, state: preview.initial.state, reason: preview.initial.reason };
  for (const tr of preview.transitions) {
    const at = new Date(tr.at).getTime();
    if (at > t1) break;
    bands.push({ ...cur, end: at });
    cur = { start: at, state: tr.state, reason: tr.reason };
  }
  bands.push({ ...cur, end: t1 });

  svg.append(s('text', { x: 4, y: 62, class: 'row-label' }, 'schedule'));
  for (const b of bands) {
    const x0 = x(b.start);
    const w = Math.max(1, x(b.end) - x0);
    const g = s('g', { class: `band ${b.state}` },
      s('title', {}, `${b.state}: ${b.reason}\n${fmt(b.start, gateZone)} – ${fmt(b.end, gateZone)} (${gateZone})`),
      s('rect', { x: x0, y: 40, width: w, height: 34, rx: 2 }));
    const name = windowName(b.reason);
    const icon = b.state === 'open' ? '✓' : '✕';
    // Narrow bands still carry their icon, so colour is never the only cue.
    if (w > 60) g.append(s('text', { x: x0 + 5, y: 55, class: 'band-state' }, `${icon} ${b.state}`));
    else if (w > 10) g.append(s('text', { x: x0 + w / 2, y: 61, class: 'band-state', 'text-anchor': 'middle' }, icon));
    if (w > 90 && name) g.append(s('text', { x: x0 + 5, y: 69, class: 'band-name' }, clip(name, w / 6.5)));
    svg.append(g);
  }

  svg.append(s('text', { x: 4, y: 98, class: 'row-label' }, 'overrides'));
  for (const o of overrides) {
    const start = new Date(o.startsAt).getTime();
    const end = o.expiresAt ? new Date(o.expiresAt).getTime() : t1;
    if (end < t0 || start > t1) continue;
    const x0 = x(start);
    const w = Math.max(3, x(end) - x0);
    svg.append(s('g', { class: `band override ${o.state}` },
      s('title', {}, `${o.state} by ${o.actor}: ${o.reason}\n${fmt(start, gateZone)} – ${o.expiresAt ? fmt(end, gateZone) : 'until cancelled'}`),
      s('rect', { x: x0, y: 84, width: w, height: 20, rx: 2 }),
      w > 80 ? s('text', { x: x0 + 4, y: 98, class: 'band-name' }, clip(`${o.state} · ${o.actor}`, w / 6.5))
        : s('text', { x: x0 + w + 4, y: 98, class: 'band-name outside' }, `${o.state} · ${o.actor}`)));
  }

  ticks(svg, t0, t1, x, gateZone, 30, 'top', `${gateZone} (gate)`);
  if (viewerZone !== gateZone) ticks(svg, t0, t1, x, viewerZone, 126, 'bottom', `${viewerZone} (you)`);
  else svg.append(s('text', { x: 4, y: 126, class: 'row-label' }, 'your zone = gate zone'));

  svg.append(s('line', { x1: x(t0), x2: x(t0), y1: 34, y2: 108, class: 'now' }),
    s('text', { x: x(t0) + 3, y: 118, class: 'now-label' }, 'now'));
  return svg;
}

function windowName(reason) {
  const m = /window '([^']+)'/.exec(reason || '');
  if (m) return m[1];
  if (/override/i.test(reason || '')) return 'override';
  if (/default/i.test(reason || '')) return 'default';
  return '';
}

function clip(text, chars) {
  const n = Math.max(3, Math.floor(chars));
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

function fmt(t, zone) {
  return new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: zone }).format(new Date(t));
}

/** Day ticks at local midnights of `zone` (found in 15-minute steps). */
function ticks(svg, t0, t1, x, zone, y, side, label) {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
  const day = new Intl.DateTimeFormat(undefined, { timeZone: zone, weekday: 'short', day: 'numeric' });
  svg.append(s('text', { x: 4, y, class: 'row-label zone' }, label.length > 16 ? label.split(' ')[0].split('/').pop() : label));
  const step = 15 * 60 * 1000;
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    if (parts.format(new Date(t)) !== '00:00') continue;
    const xx = x(t);
    svg.append(s('line', { x1: xx, x2: xx, y1: side === 'top' ? y + 4 : 40, y2: side === 'top' ? 108 : y - 10, class: `tick ${side}` }));
    // No label where it would be cut off at the right edge.
    if (xx < W - 50) svg.append(s('text', { x: xx + 3, y, class: 'tick-label' }, day.format(new Date(t))));
  }
}
