import type { Scope } from '../auth/policies.js'
import { escapeHtml, linkButtons, pageLayout as layout, type PageLink } from '../lib/html.js'

// The consent and sign-in pages, in the service's page layout (lib/html.ts: no script, strict CSP).

/**
 * A client known only by its metadata document: its name and details are whatever that host
 * publishes, and the host is the one thing the user can check (draft-ietf-oauth-client-id-metadata-document §8.5).
 */
function documentNotice(documentHost: string | undefined): string {
  if (documentHost === undefined) return ''
  return `<p class="muted">Not registered with this service; its details come from <strong>${escapeHtml(documentHost)}</strong>.</p>\n`
}

export interface SignInPage {
  clientName: string
  /** The host of the client's metadata document, for a client that is not registered here. */
  documentHost?: string
  requestId: string
  error?: string
  login?: string
  /** Link to the provider sign-in that comes back to this page, when provider login is on. */
  providerHref?: string
  /** "Sign in with <display name>" through OpenID Connect, coming back to this page, when it is on. */
  oidcLink?: PageLink
  /** Link to the forgot-password page, while mail goes out. */
  forgotHref?: string
}

export function signInPage({ clientName, documentHost, requestId, error, login = '', providerHref, oidcLink, forgotHref }: SignInPage): string {
  return layout('Sign in', `<h1>Sign in to continue to ${escapeHtml(clientName)}</h1>
${documentNotice(documentHost)}${error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>`}
<form method="post" action="/api/oauth2/consent/login">
<input type="hidden" name="request_id" value="${escapeHtml(requestId)}">
<label for="login">Email or username</label>
<input id="login" name="login" autocomplete="username" required value="${escapeHtml(login)}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
${providerHref === undefined ? '' : `<div class="actions"><a class="button" href="${escapeHtml(providerHref)}">Sign in with GitHub</a></div>`}${oidcLink === undefined ? '' : `\n${linkButtons([oidcLink])}`}${forgotHref === undefined ? '' : `\n<p class="muted"><a href="${escapeHtml(forgotHref)}">Forgot password?</a></p>`}`)
}

export interface ConsentPage {
  clientName: string
  clientId: string
  /** The host of the client's registered `client_uri`, if any. */
  clientHost?: string
  /** The host of the client's metadata document, for a client that is not registered here. */
  documentHost?: string
  requestId: string
  csrfToken: string
  username: string
  /** Each scope with what it lets the client do, for the team selected and where the token is for. */
  scopes: ReadonlyArray<{ name: Scope; description: string }>
  /** The user's teams; the `selected` one is preselected. */
  teams: ReadonlyArray<{ id: string; name: string; selected: boolean }>
  /** The satellite whose MCP servers the token is for, when the request names one the user may know. */
  satelliteName?: string
}

/** The line under the team choice: what choosing means, since the page has no script to rewrite the scope list. */
function teamHint(satelliteName: string | undefined): string {
  const where = satelliteName === undefined ? '' : ` on satellite <strong>${escapeHtml(satelliteName)}</strong>`
  return `<p class="muted">The client gets this team only. Choose another team to give it that team's MCP servers${where} instead.</p>`
}

/** For a client known by its metadata document, the document's host replaces `client_uri`'s: the document may claim any `client_uri`. */
export function consentPage({ clientName, clientId, clientHost, documentHost, requestId, csrfToken, username, scopes, teams, satelliteName }: ConsentPage): string {
  const scopeItems = scopes.map((scope) => `<li><strong>${escapeHtml(scope.name)}</strong>: ${escapeHtml(scope.description)}</li>`).join('\n')
  const teamOptions = teams.map((team) => `<option value="${escapeHtml(team.id)}"${team.selected ? ' selected' : ''}>${escapeHtml(team.name)}</option>`).join('\n')
  const satelliteLine = satelliteName === undefined ? '' : `<p>For the MCP servers on satellite <strong>${escapeHtml(satelliteName)}</strong>.</p>\n`
  return layout('Authorize access', `<h1>${escapeHtml(clientName)} wants to access your account</h1>
${documentHost !== undefined ? documentNotice(documentHost) : clientHost === undefined ? '' : `<p class="muted">from ${escapeHtml(clientHost)}</p>\n`}<p class="muted">Signed in as ${escapeHtml(username)} · client <code>${escapeHtml(clientId)}</code></p>
${satelliteLine}<p>It asks to:</p>
<ul>
${scopeItems}
</ul>
<form method="post" action="/api/oauth2/consent">
<input type="hidden" name="request_id" value="${escapeHtml(requestId)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">
<label for="team_id">Team</label>
<select id="team_id" name="team_id">
${teamOptions}
</select>
${teamHint(satelliteName)}
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
</div>
</form>`)
}
