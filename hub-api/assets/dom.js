// Small DOM helpers: elements are built with createElement and text nodes,
// never from HTML strings, so names and reasons from the API cannot inject markup.

/** h('a', {href: '#/x', class: 'c'}, 'text', child) → element. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Like h() for SVG elements. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
export { viewerZone };

// Formatters are costly to build; the fleet grid formats thousands of times.
const formatters = new Map();

/** "Tue 24 Nov, 14:05" in `zone` (default the viewer's); with seconds if asked. */
export function fmtTime(iso, zone, seconds = false) {
  if (!iso) return '—';
  const d = iso instanceof Date ? iso : new Date(iso);
  const tz = zone || viewerZone;
  const key = `${tz}|${seconds}`;
  let f = formatters.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(undefined, {
      weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit',
      second: seconds ? '2-digit' : undefined, hourCycle: 'h23', timeZone: tz,
    });
    formatters.set(key, f);
  }
  return f.format(d);
}

/** "in 3 h 20 min" / "5 min ago". */
export function relTime(iso, now = Date.now()) {
  if (!iso) return '';
  const ms = new Date(iso).getTime() - now;
  const abs = Math.abs(ms);
  const m = Math.round(abs / 60000);
  let txt;
  if (m < 1) txt = 'less than a minute';
  else if (m < 60) txt = `${m} min`;
  else if (m < 48 * 60) txt = `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ''}`;
  else txt = `${Math.round(m / 1440)} days`;
  return ms >= 0 ? `in ${txt}` : `${txt} ago`;
}

/** A status badge: icon + word, so colour is never the only cue. */
export function badge(kind, text) {
  const icons = { open: '✓', closed: '✕', held: '‖', offline: '⚠', online: '●', info: 'ℹ', waiting: '◔' };
  return h('span', { class: `badge ${kind}` }, h('span', { class: 'icon', 'aria-hidden': 'true' }, icons[kind] || ''), ' ', text);
}

/** Shows a short message in the corner for a few seconds. */
export function toast(text, kind = 'info') {
  const box = document.getElementById('toasts');
  const t = h('div', { class: `toast ${kind}` }, text);
  box.append(t);
  while (box.children.length > 4) box.firstChild.remove();
  setTimeout(() => t.remove(), 6000);
}

/** Plain YAML for showing a manifest (objects, arrays, scalars). */
export function toYaml(v, indent = '') {
  if (Array.isArray(v)) {
    if (!v.length) return '[]';
    return v.map((x) => {
      const inner = toYaml(x, indent + '  ');
      return `\n${indent}- ${isBlock(x) ? inner.trimStart() : inner}`;
    }).join('');
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (!keys.length) return '{}';
    return keys.map((k) => {
      const x = v[k];
      const inner = toYaml(x, indent + '  ');
      return `\n${indent}${k}:${isBlock(x) ? '' : ' '}${inner}`;
    }).join('');
  }
  if (typeof v === 'string') {
    return /^[\w./@-][\w ./@:+-]*$/.test(v) && !/^(true|false|null|yes|no|\d.*)$/i.test(v) ? v : JSON.stringify(v);
  }
  return String(v);
}

function isBlock(x) {
  return x && typeof x === 'object' && Object.keys(x).length > 0;
}
