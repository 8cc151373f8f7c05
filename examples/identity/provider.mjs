// A local OpenID provider for development with openwop-bridge (npm oidc-provider), on
// http://127.0.0.1:9400 only. Start it with
//
//   npm --prefix examples/identity ci
//   node examples/identity/provider.mjs
//
// and serve with `openwop-bridge serve --identity-config examples/identity/identity.json`.
//
// - People sign in on the provider's development login page: any login name and any password
//   work. alice and bob are the demo people, in the group "approvers" (which identity.json grants
//   approvals:respond); anyone else is a person with no group.
// - bridge-inbox is the inbox's client (authorization code flow), returning to
//   http://127.0.0.1:8000/ui/auth/callback.
// - demo-service is a service's client (client credentials grant).
//
// Access tokens are JWTs for the audience http://127.0.0.1:8000 (the bridge) and last ten minutes. Everything is
// kept in memory: a restart forgets sessions and tokens. For development only.
import Provider from 'oidc-provider';

const PORT = 9400;
const ISSUER = `http://127.0.0.1:${PORT}`;
const AUDIENCE = 'http://127.0.0.1:8000'; // the bridge, as RFC 9728 names it
const SCOPES = 'runs:create runs:read runs:cancel interrupts:read approvals:respond workflows:read metrics:read';

const PEOPLE = {
  alice: { name: 'Alice Martin', email: 'alice@example.com', groups: ['approvers'] },
  bob: { name: 'Bob Chen', email: 'bob@example.com', groups: ['approvers'] },
};

function person(id) {
  const known = PEOPLE[id] || { name: id, email: `${id}@example.com`, groups: [] };
  return { sub: id, preferred_username: id, email_verified: true, ...known };
}

const provider = new Provider(ISSUER, {
  clients: [
    {
      client_id: 'bridge-inbox',
      client_secret: 'bridge-inbox-dev-secret',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1:8000/ui/auth/callback'],
      post_logout_redirect_uris: ['http://127.0.0.1:8000/ui/'],
    },
    {
      client_id: 'demo-service',
      client_secret: 'demo-service-dev-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: SCOPES,
    },
  ],
  scopes: ['openid', 'profile', 'email', ...SCOPES.split(' ')],
  claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'groups'], email: ['email', 'email_verified'] },
  conformIdTokenClaims: false, // the ID token carries the profile and email claims itself
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => person(id) }),
  // The claims identity.json maps, on every access token: the person's, or the service's name.
  extraTokenClaims: async (_ctx, token) => {
    if (token.kind === 'ClientCredentials') return { preferred_username: token.clientId };
    const { preferred_username, name, email, groups } = person(token.accountId);
    return { preferred_username, name, email, groups };
  },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => AUDIENCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        if (resource !== AUDIENCE) throw new Provider.errors.InvalidTarget();
        return { scope: SCOPES, audience: AUDIENCE, accessTokenTTL: 600, accessTokenFormat: 'jwt' };
      },
    },
  },
  ttl: { Session: 8 * 3600, Interaction: 3600, Grant: 8 * 3600, AuthorizationCode: 60, IdToken: 600 },
});
provider.on('server_error', (_ctx, err) => console.error(err));

const server = provider.listen(PORT, '127.0.0.1', () => {
  console.log(`OpenID provider for development: issuer ${ISSUER}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.on('SIGINT', () => server.close(() => process.exit(0)));
