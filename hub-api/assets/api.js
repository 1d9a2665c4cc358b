// The REST client. Two ways in: a pasted API token, kept in sessionStorage
// (this tab only, gone when it closes) and sent only in the Authorization
// header; or a session from signing in with the identity provider, an
// HttpOnly cookie the script never sees — then every write carries the
// session's CSRF token (from whoami) in X-CSRF-Token.

const KEY = 'fleetgate.token';

export function token() {
  return sessionStorage.getItem(KEY);
}

let csrf = null;

/** The session's CSRF token (null with an API token). */
export function setCsrf(t) {
  csrf = t || null;
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

/** An error answer of the API: {status, code, message, field}. */
export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || 'http_error';
    this.field = e.field || null;
  }
}

/** fetch() against the hub's API with the token; JSON in and out (or `raw: {type, text}`
 * sent as it is, e.g. a YAML manifest); `ifMatch`: the version a write expects (412 if stale). */
export async function api(path, { method = 'GET', body, raw, query, ifMatch } = {}) {
  const headers = { Accept: 'application/json' };
  if (ifMatch !== undefined && ifMatch !== null) headers['If-Match'] = `"${ifMatch}"`;
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  else if (csrf && method !== 'GET') headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (raw) headers['Content-Type'] = raw.type;
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
    const qs = q.toString();
    if (qs) url += `?${qs}`;
  }
  const res = await fetch(url, {
    method, headers, body: raw ? raw.text : body === undefined ? undefined : JSON.stringify(body),
    // The session cookie, if any, goes along (same origin only).
    credentials: t ? 'omit' : 'same-origin', cache: 'no-store',
  });
  if (res.status === 204) return null;
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401) window.dispatchEvent(new CustomEvent('fleetgate:unauthenticated'));
    throw err;
  }
  return data;
}

export const enc = encodeURIComponent;
