import formBody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { optionalSession, type SessionCaller } from '../../auth/sessions.js'
import { userCaller } from '../../http/current-user.js'
import { AppError } from '../../http/errors.js'
import { clientHost, type OAuthClient } from '../clients.js'
import { consentPage, signInPage } from '../pages.js'
import { forgotPasswordHref } from '../../modules/auth/page-links.js'
import { setChallengeCookie } from '../../modules/two-factor/challenge-cookie.js'
import { TWO_FACTOR_PAGES } from '../../modules/two-factor/pages.js'
import { oidcSignInLink } from '../../modules/oidc-login/sign-in-link.js'
import { AuthorizeQuery, ConsentBody, ConsentDetails, ConsentLoginBody, ConsentQuery, DecisionAnswer, Redirect, tags } from '../schemas.js'
import { sendPage } from '../../http/pages.js'
import { describeValidation, failPage, isForm, START_AGAIN, wantsJson } from './shared.js'

/**
 * The CSP form-action sources a sign-in or consent page needs besides its own origin. Browsers
 * check form-action on every redirect that follows a form submission (CSP Level 3, "navigation
 * request" checks), not only on the form's own action: the consent form ends in a 302 to the
 * client's redirect URI, and so does the sign-in form of a user whose approval is remembered
 * (303 to the consent page, then 302 to the client). Without the redirect URI's origin the
 * browser stops on the page and the code issued for the client is lost. A CSP host source cannot
 * spell an IPv6 literal (`http://[::1]:8976` is dropped as invalid), so for such a host only its
 * scheme can be named.
 */
function redirectFormTargets(redirectUri: string): string[] {
  const url = new URL(redirectUri)
  return [url.hostname.startsWith('[') ? url.protocol : url.origin]
}

/** What the browser sees — the authorization endpoint, sign-in and consent. */
export const browserRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const oauth = () => app.services.oauth
  // The consent page's forms post form-encoded bodies; only these routes accept them.
  await app.register(formBody)

  async function providerHref(requestId: string): Promise<string | undefined> {
    const { enabled, configured } = await app.services.providerLogin.status()
    if (!enabled || !configured) return undefined
    return `/api/auth/provider/login?return_to=${encodeURIComponent(`/api/oauth2/consent?request_id=${requestId}`)}`
  }

  const oidcLink = (requestId: string) => oidcSignInLink(app.services.oidcLogin, `/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`)

  app.get('/api/oauth2/auth', {
    config: { auth: policy.public(), limit: 'authorize', oauthErrors: {}, unknownParameters: 'ignore', htmlRefusals: { hint: START_AGAIN } },
    attachValidation: true,
    schema: {
      tags, summary: 'Authorization endpoint (authorization code with PKCE S256)',
      description: 'An unknown client or a redirect URI not registered for it → 400 (HTML page, or JSON with `Accept: application/json`), never a redirect. ' +
        'A `client_id` that is an https URL with a path is a Client ID Metadata Document: the service fetches it (5 s, 64 KiB, JSON, no redirects, ' +
        'public addresses only, cached per its cache headers up to 24 h), and a document that cannot be used answers that 400 with the reason in ' +
        '`error_description`. ' +
        'Once those are known, every other error redirects to the client with `error`, `error_description`, `state` (when sent) and `iss` (RFC 9207): ' +
        '`invalid_request` (missing PKCE, `plain`, a malformed parameter), `unsupported_response_type`, `invalid_scope`, `access_denied` while login is off, ' +
        '`login_required` / `consent_required` for `prompt=none`. Exception (no open redirect, RFC 9700 §4.11.2): for a registered or metadata-document ' +
        'client that no user has ever approved, a browser without a session gets these errors as a 400 page (or JSON) instead of a redirect. ' +
        '`state` is optional (PKCE S256 is required). For `http://127.0.0.1` and `http://[::1]` ' +
        'redirect URIs the port is not compared (RFC 8252 §7.3). A valid request is stored (10 minutes) and the browser goes to the consent page — ' +
        'or straight back to the client with a code when this user already approved these scopes for it at this exact redirect URI, port included ' +
        '(unless `prompt=consent` or `prompt=login`). Limited per IP (429 `temporarily_unavailable` / RATE_LIMITED with `Retry-After`); fetches of ' +
        'uncached metadata documents are bounded per IP and per instance, answered the same way. ' +
        'Unknown query parameters are ignored (RFC 6749 §3.1).',
      querystring: AuthorizeQuery,
      response: { 302: Redirect },
    },
  }, async (request, reply) => {
    try {
      // A bad parameter is the client's to hear about once its identity and redirect URI are known.
      const invalid = request.validationError ? describeValidation(request.validationError) : undefined
      return reply.redirect(await oauth().authorization.authorize(request.query, await optionalSession(app.services.sessions, request, reply), { ip: request.ip }, invalid), 302)
    } catch (error) {
      return failPage(request, reply, error)
    }
  })

  app.get('/api/oauth2/consent', {
    config: { auth: policy.public(), htmlRefusals: { hint: START_AGAIN } },
    schema: {
      tags, summary: 'The consent page (HTML), or its details as JSON',
      description: 'HTML by default: a sign-in form when the browser has no session, else the client, the scopes in plain words, a team choice and ' +
        'Approve / Deny, under a strict Content-Security-Policy. A client known only by its metadata document is marked as not registered with ' +
        'this service, with the host its details come from. With `Accept: application/json`, the same details for a separate frontend. ' +
        'The team is preselected by the service (one `selected`; see `teams`): the team the request\'s `resource` names — a satellite\'s MCP ' +
        'endpoint `<satellite_url>/mcp` or `<satellite_url>/mcp/<installation id>` — when the user is a member of it, else the team chosen last ' +
        'time for this client, else a team with installations, else the default team. For a satellite\'s resource the page names the satellite, ' +
        'and `mcp:read` reads "Use the MCP servers of team X on satellite Y". ' +
        'A signed-in browser binds the request to its session; a remembered consent redirects straight to the client with a code — unless the ' +
        'resource names another of the user\'s teams than the one approved last time: then the page is shown, with that team selected. ' +
        'Both pages (the sign-in page also when sent again after a failed attempt) allow form submissions to continue to the origin of ' +
        'the request\'s redirect URI (CSP `form-action \'self\' <origin>`): browsers check form-action on every redirect after a form post, ' +
        'and the sign-in of a user whose approval is remembered ends, through this page, in the redirect to the client. A CSP source cannot ' +
        'name an IPv6 literal, so for a redirect URI on `[::1]` its scheme (`http:`) is allowed instead.',
      querystring: ConsentQuery,
      response: { 200: ConsentDetails, 302: Redirect },
    },
  }, async (request, reply) => {
    const session = await optionalSession(app.services.sessions, request, reply)
    const requestId = request.query.request_id
    let view
    try {
      view = await oauth().consent.view(requestId, session)
    } catch (error) {
      return failPage(request, reply, error)
    }
    const { client, scopes, teams, satellite, csrfToken } = view
    if (wantsJson(request)) {
      return {
        success: true as const,
        data: {
          request_id: requestId, client_id: client.id, client_name: client.name, client_uri: client.uri ?? null,
          client_registered: client.documentHost === undefined, client_id_document_host: client.documentHost ?? null,
          resource: view.request.resource, satellite_name: satellite?.name ?? null,
          scopes, teams, csrf_token: csrfToken, signed_in: csrfToken !== null,
        },
      }
    }
    const formTargets = redirectFormTargets(view.request.redirectUri)
    if (session === null || csrfToken === null) {
      const page = signInPage({ clientName: client.name, documentHost: client.documentHost, requestId, providerHref: await providerHref(requestId), oidcLink: await oidcLink(requestId), forgotHref: await forgotPasswordHref(app.services.mail) })
      return sendPage(reply, 200, page, formTargets)
    }
    const remembered = await oauth().consent.remembered(view.request, session)
    if (remembered !== null) return reply.redirect(remembered, 302)
    return sendPage(reply, 200, consentPage({
      clientName: client.name, clientId: client.id, clientHost: clientHost(client), documentHost: client.documentHost,
      requestId, csrfToken, username: session.user.username, scopes, teams, ...(satellite === null ? {} : { satelliteName: satellite.name }),
    }), formTargets)
  })

  app.post('/api/oauth2/consent', {
    config: { auth: policy.session(), htmlRefusals: { hint: START_AGAIN } },
    schema: {
      tags, summary: 'Approve or deny an authorization request',
      description: 'Form-encoded (the consent page) or JSON (a separate frontend). The session must be the one that saw the request, and ' +
        '`csrf_token` the one the consent page (or its JSON variant) gave. Approve → 302 (form) or 200 `data.redirect_url` (JSON) to ' +
        '`redirect_uri?code=…&state=…&iss=…`; deny → `error=access_denied`. The grant and its tokens are bound to `team_id`, or without it to ' +
        'the team the consent page selected (never a team the client names). 403 INVALID_CSRF_TOKEN, 400 INVALID_TEAM (a team the user is not a ' +
        'member of), 404 for an unknown, expired or already decided request. The approval, with its team, is remembered per user and client. ' +
        'A refusal of a browser\'s form post ' +
        '(`Accept` preferring text/html) is an HTML page with the same status.',
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: ConsentBody,
      response: { 200: DecisionAnswer, 302: Redirect },
    },
  }, async (request, reply) => {
    const form = isForm(request)
    let url: string
    try {
      url = await oauth().consent.decide(request.body, userCaller(request) as SessionCaller)
    } catch (error) {
      if (!form) throw error
      return failPage(request, reply, error)
    }
    if (form) return reply.redirect(url, 302)
    return { success: true as const, data: { redirect_url: url } }
  })

  app.post('/api/oauth2/consent/login', {
    config: { auth: policy.public(), limit: 'loginOrRegister', htmlRefusals: { hint: START_AGAIN } },
    schema: {
      tags, summary: 'Sign in from the consent page',
      description: 'The consent page\'s sign-in form (form-encoded; JSON also accepted). Success: session cookie and 303 back to the consent page. ' +
        'Failure: the sign-in page again with the reason (401 INVALID_CREDENTIALS, 403 LOGIN_DISABLED or EMAIL_NOT_VERIFIED, 429). ' +
        'An account with two-factor on goes (303) to the second step\'s page (/api/auth/sign-in/two-factor), which then returns to the consent page. ' +
        'An `Origin` header, when sent, must be this service\'s own (for a loopback `PUBLIC_URL`, under any loopback spelling: `localhost`, ' +
        '`127.0.0.1`, `[::1]`, same scheme and port) or a configured CORS origin; any other → 403, as an HTML page for a browser.',
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: ConsentLoginBody,
      response: { 303: Redirect },
    },
  }, async (request, reply) => {
    const { request_id: requestId, login, password } = request.body
    const origin = request.headers.origin
    // Login CSRF: a cross-site form must not sign the browser in to someone else's account.
    if (origin !== undefined && !oauth().isAllowedOrigin(origin)) {
      throw new AppError(403, 'FORBIDDEN', `Cross-site sign-in refused: the form was sent from ${origin}, which is not this service.`, { origin })
    }
    let client: OAuthClient
    let formTargets: string[]
    try {
      const { client: found, request: pending } = await oauth().consent.view(requestId, null)
      client = found
      formTargets = redirectFormTargets(pending.redirectUri)
    } catch (error) {
      return failPage(request, reply, error)
    }
    try {
      const { session, challenge } = await app.services.accounts.login(login, password, { ip: request.ip })
      if (challenge !== undefined) {
        // Two-factor on: the second step's page asks for the code, then comes back here.
        setChallengeCookie(reply, app.services.sessions.cookie, challenge.token)
        return reply.redirect(`${TWO_FACTOR_PAGES.signIn}?request_id=${encodeURIComponent(requestId)}`, 303)
      }
      await oauth().consent.adopt(requestId, session.rowId)
      app.services.sessions.setCookie(reply, session.id, session.expiresAt)
    } catch (error) {
      if (!(error instanceof AppError) || wantsJson(request)) throw error
      if (error.headers) reply.headers(error.headers)
      return sendPage(reply, error.statusCode, signInPage({
        clientName: client.name, documentHost: client.documentHost, requestId, error: error.message, login, providerHref: await providerHref(requestId), oidcLink: await oidcLink(requestId),
        forgotHref: await forgotPasswordHref(app.services.mail),
      }), formTargets)
    }
    return reply.redirect(`/api/oauth2/consent?request_id=${encodeURIComponent(requestId)}`, 303)
  })
}
