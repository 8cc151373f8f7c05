// A real OpenID provider for the tests (npm oidc-provider), on 127.0.0.1 and an ephemeral port.
//
// Configured by the JSON in OIDC_TEST_CONFIG:
//   {"audience": "urn:…",                        the resource whose access tokens are JWTs
//    "scope": "runs:read …",                     the scopes the resource grants
//    "clients": [{"client_id", "client_secret",  client_credentials clients (services, or a person's
//                 "ttl"?, "claims"?}],           claims for the tests), each with its token lifetime
//    "inbox": {"client_id", "client_secret", "redirect_uris"},   the inbox (authorization code flow)
//    "accounts": {"<login>": {claims}}}          claims of people signing in (beside sub, name, preferred_username)
// Prints "OIDC_PROVIDER_READY <issuer>" once it listens. Test controls (loopback only):
//   POST /_test/rotate?keep=1   a new signing key; the old one stays published with keep=1, else it is removed
//   GET  /_test/signing-key     the current private signing key (so a test can sign tokens of its own)
// RFC 7662 introspection (/token/introspection) and RFC 7009 revocation (/token/revocation) are on.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(process.env.OIDC_TEST_CONFIG || '{}');
const audience = config.audience;
const clients = config.clients || [];
const byClient = new Map(clients.map((c) => [c.client_id, c]));

function newKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

function build(issuer, keys) {
  const registered = clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: config.scope,
  }));
  if (config.inbox) {
    registered.push({
      client_id: config.inbox.client_id,
      client_secret: config.inbox.client_secret,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: config.inbox.redirect_uris,
    });
  }
  const provider = new Provider(issuer, {
    clients: registered,
    jwks: { keys },
    scopes: ['openid', 'profile', 'email', ...(config.scope || '').split(' ').filter(Boolean)],
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource, client) => {
          if (resource !== audience) throw new Provider.errors.InvalidTarget();
          const ttl = byClient.get(client.clientId)?.ttl || 300;
          return { scope: config.scope, audience, accessTokenTTL: ttl, accessTokenFormat: 'jwt' };
        },
      },
    },
    extraTokenClaims: (_ctx, token) => byClient.get(token.clientId)?.claims,
    // A person's claims go in the ID token (the inbox's sign-in maps them as it maps a token's).
    claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'groups', 'org'], email: ['email'] },
    conformIdTokenClaims: false,
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, name: id, preferred_username: id, ...(config.accounts || {})[id] }),
    }),
  });
  provider.on('server_error', (_ctx, err) => console.error(err));
  // oidc-provider keeps no record of a JWT access token, so it can neither introspect nor revoke one.
  // Each client-credentials JWT is therefore also kept as an opaque token under its jti, and the two
  // endpoints are asked about that jti (see asking): the provider's own logic answers and revokes.
  provider.on('client_credentials.issued', (token) => {
    const record = new provider.ClientCredentials({ client: token.client, scope: token.scope, aud: token.aud });
    Object.assign(record, { jti: token.jti, iat: token.iat, exp: token.exp, format: 'opaque' });
    record.save().catch((err) => console.error(err));
  });
  return provider;
}

const ASKING = new Set(['/token/introspection', '/token/revocation']);

async function asking(req) {
  // The form's token, a JWT, replaced by its jti; the body handed on parsed (oidc-provider accepts that).
  let body = '';
  for await (const chunk of req) body += chunk;
  const form = Object.fromEntries(new URLSearchParams(body));
  const [, payload] = (form.token || '').split('.');
  if (payload) {
    try {
      form.token = JSON.parse(Buffer.from(payload, 'base64url').toString()).jti || form.token;
    } catch {}
  }
  req.body = form;
}

let keys = [newKey()];
let handler = null;
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (req.method === 'POST' && url.pathname === '/_test/rotate') {
    keys = url.searchParams.get('keep') === '1' ? [newKey(), ...keys] : [newKey()];
    handler = build(issuer, keys).callback();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kid: keys[0].kid }));
    return;
  }
  if (req.method === 'GET' && url.pathname === '/_test/signing-key') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(keys[0]));
    return;
  }
  if (req.method === 'POST' && ASKING.has(url.pathname)) {
    asking(req).then(() => handler(req, res));
    return;
  }
  handler(req, res);
});
let issuer = '';
server.listen(0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  handler = build(issuer, keys).callback();
  console.log(`OIDC_PROVIDER_READY ${issuer}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
