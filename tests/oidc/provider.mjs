// A real OpenID provider for fleetgate's identity tests: npm's oidc-provider
// (OpenID Certified) with a few users and groups, the authorization code
// flow with PKCE, refresh tokens and the device flow. Listens on 127.0.0.1.
//
//   node provider.mjs <port>
//
// Besides the provider's own endpoints, /__test/* lets a test act on it as
// an operator would: register a client (POST /__test/clients), rotate the
// signing key (POST /__test/rotate), take the provider down and up again
// (POST /__test/down, /__test/up: every other path answers 503 meanwhile),
// and mint tokens signed with the provider's current key for the claims
// it is given (POST /__test/mint) — expired or wrong-audience tokens a
// well-behaved provider would never issue; revoke every grant of a user
// (POST /__test/revoke {login}: their refresh tokens stop working), set the
// ID tokens' lifetime (POST /__test/ttl {idToken: seconds}), and
// spoil the next token response (POST /__test/tamper {mode}: `nonce` re-signs
// the ID token with another nonce, `no_id_token` leaves it out), and switch
// the device flow off and on (POST /__test/device {enabled}: without it the
// CLI signs in with a loopback redirect), and answer token requests late
// (POST /__test/delay {ms}; GET /__test/delayed: how many are being held now).
import http from 'node:http';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const port = Number(process.argv[2] || 0);
const issuer = `http://127.0.0.1:${port}`;

// Users: password is "<login>-pw".
const USERS = {
  alice: { name: 'Alice Admin', email: 'alice@example.com', groups: ['platform-admins'] },
  bob: { name: 'Bob Operator', email: 'bob@example.com', groups: ['sre'] },
  carol: { name: 'Carol Viewer', email: 'carol@example.com', groups: ['developers'] },
  erin: { name: 'Erin Operator', email: 'erin@example.com', groups: ['sre'] },
  dave: { name: 'Dave Nobody', email: 'dave@example.com', groups: [] },
};

const clients = [];
let keys = [await newKey()];
let down = false;
// Grant ids by account (for /__test/revoke); the next token response's spoiling.
const grants = new Map();
let tamper = null;
// ID token lifetime in seconds (POST /__test/ttl {idToken}: short, so a test sees sessions refresh).
let idTokenTtl = Number(process.env.OIDC_ID_TOKEN_TTL || 3600);
let deviceFlow = true;
// Token requests wait this long before the provider answers; how many wait now.
let tokenDelay = 0;
let delayed = 0;
let provider = build();

async function newKey() {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  jwk.kid = `k-${Math.random().toString(36).slice(2, 10)}`;
  jwk.alg = 'RS256';
  jwk.use = 'sig';
  return jwk;
}

const html = (title, body) => `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

function build() {
  const p = new Provider(issuer, {
    // Without the device flow a client may not name its grant type.
    clients: deviceFlow ? clients : clients.map((c) => ({
      ...c, grant_types: c.grant_types?.filter((g) => !g.endsWith(':device_code')),
    })),
    jwks: { keys },
    findAccount: async (_ctx, sub) => {
      const u = USERS[sub];
      if (!u) return undefined;
      return {
        accountId: sub,
        claims: async () => ({
          sub, name: u.name, preferred_username: sub, email: u.email, email_verified: true, groups: u.groups,
        }),
      };
    },
    claims: {
      openid: ['sub'],
      profile: ['name', 'preferred_username'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    scopes: ['openid', 'offline_access', 'profile', 'email', 'groups'],
    // The ID token carries the profile claims (what the hub reads).
    conformIdTokenClaims: false,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['fleetgate-test-cookie-key'] },
    // PKCE (S256) for every client, the dashboard's confidential one too:
    // a sign-in without it fails, so the tests prove the hub sends it.
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      revocation: { enabled: true },
      deviceFlow: {
        enabled: deviceFlow,
        userCodeInputSource: async (ctx, form, _out, err) => {
          ctx.body = html('Device sign-in', `${err ? '<p id="error">The code is incorrect</p>' : ''}${form}
            <button id="device-continue" type="submit" form="op.deviceInputForm">Continue</button>`);
        },
        userCodeConfirmSource: async (ctx, form, _client, _info, userCode) => {
          ctx.body = html('Confirm device', `<p>Code <code id="user-code">${userCode}</code></p>${form}
            <button id="device-confirm" type="submit" form="op.deviceConfirmForm">Continue</button>`);
        },
        successSource: async (ctx) => {
          ctx.body = html('Signed in', '<p id="device-done">You can return to your terminal.</p>');
        },
      },
    },
    ttl: {
      IdToken: idTokenTtl,
      AccessToken: 3600,
      DeviceCode: 600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      RefreshToken: 86400,
    },
  });
  p.on('server_error', (_ctx, err) => console.error('server_error', err));
  return p;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (c) => { data += c; if (data.length > 1e6) req.destroy(); });
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

function send(res, status, body, type = 'application/json') {
  res.writeHead(status, { 'content-type': type });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

async function control(req, res, path) {
  const body = req.method === 'POST' ? await readBody(req) : '';
  const json = body ? JSON.parse(body) : {};
  switch (path) {
    case '/__test/clients':
      clients.push(json);
      provider = build();
      return send(res, 200, { ok: true });
    case '/__test/rotate':
      keys = [await newKey()];
      provider = build();
      return send(res, 200, { kid: keys[0].kid });
    case '/__test/revoke': {
      const ids = grants.get(json.login) || [];
      grants.delete(json.login);
      for (const id of ids) {
        const grant = await provider.Grant.find(id);
        if (grant) await grant.destroy();
      }
      return send(res, 200, { revoked: ids.length });
    }
    case '/__test/ttl':
      idTokenTtl = Number(json.idToken) || 3600;
      provider = build();
      return send(res, 200, { idToken: idTokenTtl });
    case '/__test/device':
      deviceFlow = Boolean(json.enabled);
      provider = build();
      return send(res, 200, { deviceFlow });
    case '/__test/tamper': tamper = json.mode || null; return send(res, 200, { tamper });
    case '/__test/delay': tokenDelay = Number(json.ms) || 0; return send(res, 200, { tokenDelay });
    case '/__test/delayed': return send(res, 200, { delayed });
    case '/__test/down': down = true; return send(res, 200, { down });
    case '/__test/up': down = false; return send(res, 200, { down });
    case '/__test/mint': {
      const key = await jose.importJWK(keys[0], 'RS256');
      const now = Math.floor(Date.now() / 1000);
      const claims = { iss: issuer, iat: now, exp: now + 300, ...json.claims };
      const token = await new jose.SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: json.kid || keys[0].kid, typ: 'JWT' })
        .sign(key);
      return send(res, 200, { token, publicJwk: { ...keys[0], d: undefined, p: undefined, q: undefined, dp: undefined, dq: undefined, qi: undefined } });
    }
    default:
      return send(res, 404, { error: 'no such test endpoint' });
  }
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (action === 'login' && req.method === 'POST') {
    const form = new URLSearchParams(await readBody(req));
    const login = form.get('login');
    if (!USERS[login] || form.get('password') !== `${login}-pw`) {
      return send(res, 200, html('Sign in', `<p id="error">Wrong user or password</p>${loginForm(uid)}`), 'text/html');
    }
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  if (prompt.name === 'login') {
    return send(res, 200, html(`Sign in to ${params.client_id}`, loginForm(uid)), 'text/html');
  }
  // Consent is given for every client of the tests.
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  if (prompt.details.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  const grantId = await grant.save();
  grants.set(session.accountId, [...(grants.get(session.accountId) || []), grantId]);
  const consent = details.grantId ? {} : { grantId };
  return provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
}

// Rewrites the token endpoint's JSON answer as it is sent (once).
function spoil(res, mode) {
  tamper = null;
  const end = res.end.bind(res);
  res.end = (body, ...rest) => {
    res.end = end;
    let json;
    try { json = JSON.parse(String(body)); } catch { return end(body, ...rest); }
    const done = (out) => {
      const text = JSON.stringify(out);
      res.setHeader('content-length', Buffer.byteLength(text));
      end(text);
    };
    if (mode === 'no_id_token' || !json.id_token) {
      delete json.id_token;
      return done(json);
    }
    // mode 'nonce': the provider's own signature over another nonce.
    const claims = jose.decodeJwt(json.id_token);
    claims.nonce = 'not-the-nonce-you-sent';
    jose.importJWK(keys[0], 'RS256')
      .then((key) => new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: keys[0].kid, typ: 'JWT' }).sign(key))
      .then((token) => done({ ...json, id_token: token }), (e) => { console.error(e); end(body, ...rest); });
    return res;
  };
}

function loginForm(uid) {
  return `<form id="login-form" method="post" action="/interaction/${uid}/login">
    <input id="login" name="login" autocomplete="username">
    <input id="password" name="password" type="password" autocomplete="current-password">
    <button id="sign-in" type="submit">Sign in</button></form>`;
}

const server = http.createServer(async (req, res) => {
  const path = new URL(req.url, issuer).pathname;
  try {
    if (path.startsWith('/__test/')) return await control(req, res, path);
    if (down) return send(res, 503, { error: 'temporarily_unavailable' });
    const m = path.match(/^\/interaction\/([^/]+)(?:\/(login))?$/);
    if (m) return await interaction(req, res, m[1], m[2]);
    if (tokenDelay && path === '/token' && req.method === 'POST') {
      delayed++;
      await new Promise((r) => setTimeout(r, tokenDelay));
      delayed--;
    }
    if (tamper && path === '/token' && req.method === 'POST') spoil(res, tamper);
    return provider.callback()(req, res);
  } catch (err) {
    console.error(err);
    if (!res.headersSent) send(res, 500, { error: 'server_error', error_description: String(err) });
  }
});

server.listen(port, '127.0.0.1', () => {
  // The test waits for this line.
  console.log(`oidc-provider listening on ${issuer}`);
});
