// The live event stream: GET /api/v1/events read with fetch + ReadableStream
// (EventSource cannot send an Authorization header, and the token must not go
// into the URL); with a signed-in session the cookie goes along instead. Reconnects with exponential backoff; after every (re)connect
// the page re-fetches its state, so a hub restart loses nothing.

import { token } from './api.js';

const MIN_DELAY = 500;
const MAX_DELAY = 15000;

/**
 * Starts the stream. onEvent(name, data) gets every event; onReady() runs
 * after each (re)connect; onStatus(text, state) reports the connection.
 * Returns a function that stops it.
 */
export function startLive({ onEvent, onReady, onStatus, onUnauthenticated }) {
  let stopped = false;
  let controller = null;
  let delay = MIN_DELAY;

  async function connect() {
    while (!stopped) {
      controller = new AbortController();
      try {
        onStatus('Connecting…', 'connecting');
        const t = token();
        const headers = { Accept: 'text/event-stream' };
        if (t) headers.Authorization = `Bearer ${t}`;
        const res = await fetch('/api/v1/events', {
          headers, credentials: t ? 'omit' : 'same-origin', cache: 'no-store', signal: controller.signal,
        });
        if (res.status === 401) { onUnauthenticated(); return; }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        await read(res.body, (name, data) => {
          if (name === 'ready') {
            delay = MIN_DELAY;
            onStatus('Live', 'live');
            onReady();
          } else if (name === 'error') {
            throw new Error(data.message || 'stream error');
          } else {
            onEvent(name, data);
          }
        });
        throw new Error('stream ended');
      } catch (e) {
        if (stopped) return;
        const wait = delay;
        delay = Math.min(delay * 2, MAX_DELAY);
        onStatus(`Reconnecting in ${Math.ceil(wait / 1000)} s`, 'down');
        await new Promise((r) => setTimeout(r, wait + Math.random() * 250));
      }
    }
  }

  connect();
  return () => { stopped = true; if (controller) controller.abort(); };
}

/** Parses a text/event-stream body, calling emit(name, json) per event. */
async function read(body, emit) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue; // keep-alive comment
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') name = val;
        else if (field === 'data') data.push(val);
      }
      if (!data.length) continue;
      let parsed = null;
      try { parsed = JSON.parse(data.join('\n')); } catch { continue; }
      emit(name, parsed);
    }
  }
}
