import { createHash } from 'node:crypto'
import type { Scope } from '../auth/policies.js'
import { escapeHtml } from '../lib/html.js'
import { SCOPE_DESCRIPTIONS } from './scopes.js'

/**
 * The consent and sign-in pages: plain HTML forms, no script at all, one stylesheet
 * allowed by its hash, so the Content-Security-Policy can forbid everything else.
 */

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1c1e21;margin:0}
main{max-width:28rem;margin:3rem auto;background:#fff;border-radius:8px;padding:2rem;box-shadow:0 1px 3px #0002}
h1{font-size:1.3rem;margin:0 0 1rem}
label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input,select{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;border:1px solid #bbb;border-radius:4px}
ul{padding-left:1.2rem}
.actions{display:flex;gap:.8rem;margin-top:1.5rem}
button,.button{flex:1;padding:.6rem;font:inherit;border-radius:4px;border:1px solid #888;background:#fff;cursor:pointer;text-align:center;text-decoration:none;color:inherit}
button.primary{background:#1f6feb;border-color:#1f6feb;color:#fff}
.error{background:#fde8e8;color:#8a1c1c;padding:.6rem;border-radius:4px}
.muted{color:#666;font-size:.9rem}
`

const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`

/**
 * A strict policy: nothing loads but the page's own stylesheet; forms may go to this service and,
 * for the consent decision's redirect (which browsers check against form-action too), to the
 * client's redirect URI origin.
 */
export function pagePolicy(formTargets: readonly string[] = []): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    "img-src 'self' data:",
    `form-action 'self'${formTargets.map((target) => ` ${target}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ')
}


function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body><main>
${body}
</main></body>
</html>
`
}

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
}

export function signInPage({ clientName, documentHost, requestId, error, login = '', providerHref }: SignInPage): string {
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
${providerHref === undefined ? '' : `<div class="actions"><a class="button" href="${escapeHtml(providerHref)}">Sign in with GitHub</a></div>`}`)
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
  scopes: readonly Scope[]
  teams: ReadonlyArray<{ id: string; name: string }>
}

/** For a client known by its metadata document, the document's host replaces `client_uri`'s: the document may claim any `client_uri`. */
export function consentPage({ clientName, clientId, clientHost, documentHost, requestId, csrfToken, username, scopes, teams }: ConsentPage): string {
  const scopeItems = scopes.map((scope) => `<li><strong>${escapeHtml(scope)}</strong>: ${escapeHtml(SCOPE_DESCRIPTIONS[scope])}</li>`).join('\n')
  const teamOptions = teams.map((team) => `<option value="${escapeHtml(team.id)}">${escapeHtml(team.name)}</option>`).join('\n')
  return layout('Authorize access', `<h1>${escapeHtml(clientName)} wants to access your account</h1>
${documentHost !== undefined ? documentNotice(documentHost) : clientHost === undefined ? '' : `<p class="muted">from ${escapeHtml(clientHost)}</p>\n`}<p class="muted">Signed in as ${escapeHtml(username)} · client <code>${escapeHtml(clientId)}</code></p>
<p>It asks to:</p>
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
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button class="primary" type="submit" name="decision" value="approve">Approve</button>
</div>
</form>`)
}

export function errorPage(title: string, message: string): string {
  return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p class="error" role="alert">${escapeHtml(message)}</p>\n<p class="muted">Start the sign-in again from your client.</p>`)
}
