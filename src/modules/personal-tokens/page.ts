import { escapeHtml, pageLayout } from '../../lib/html.js'
import { ACCOUNT_PAGES } from '../auth/page-links.js'
import { PERSONAL_TOKEN_SCOPES, SCOPE_DESCRIPTIONS } from './scopes.js'

/** Where the tokens page and its forms live. */
export const TOKENS_PAGE = ACCOUNT_PAGES.personalTokens
export const deleteAction = (id: string) => `${TOKENS_PAGE}/${encodeURIComponent(id)}/delete`

export interface PageToken {
  id: string
  name: string
  scopes: readonly string[]
  /** The bound team's name, null for every team, undefined for a team the owner has left. */
  teamName: string | null | undefined
  expiresAt: string
  expired: boolean
  lastUsedAt: string | null
}

export interface TokensPageView {
  csrfToken: string
  tokens: readonly PageToken[]
  teams: ReadonlyArray<{ id: string; name: string }>
  /** The token just created: its value is on this page, and on no other. */
  created?: { name: string; token: string }
  notice?: { tone: 'error' | 'success'; text: string }
  /** What was typed, kept after a refusal. */
  form?: { name?: string; scopes?: readonly string[]; teamId?: string; days?: string }
}

const day = (iso: string) => iso.slice(0, 10)

function tokenItem(token: PageToken, csrf: string): string {
  const team = token.teamName === null ? 'all your teams' : token.teamName === undefined ? 'a team you are no longer in (refused)' : `team ${token.teamName}`
  const expiry = token.expired ? `expired ${day(token.expiresAt)}` : `expires ${day(token.expiresAt)}`
  return `<li><strong>${escapeHtml(token.name)}</strong> <span class="muted">${escapeHtml(token.scopes.join(', '))}; ${escapeHtml(team)}; ${expiry}; ` +
    `${token.lastUsedAt === null ? 'never used' : `last used ${escapeHtml(token.lastUsedAt.slice(0, 16).replace('T', ' '))} UTC`}</span>
<form method="post" action="${escapeHtml(deleteAction(token.id))}">${csrf}<button type="submit" aria-label="Delete ${escapeHtml(token.name)}">Delete</button></form></li>`
}

/** The tokens page: the new token (once), the list with a delete button each, and the form that makes one. */
export function tokensPage({ csrfToken, tokens, teams, created, notice, form = {} }: TokensPageView): string {
  const csrf = `<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">`
  const checked = new Set(form.scopes ?? [])
  const shown = created === undefined ? '' : `<div class="success" role="status"><p>Your new token <strong>${escapeHtml(created.name)}</strong>. ` +
    `Copy it now: it is not shown again.</p><p><code id="new-token">${escapeHtml(created.token)}</code></p></div>\n`
  const note = notice === undefined ? '' : `<p class="${notice.tone}"${notice.tone === 'error' ? ' role="alert"' : ''}>${escapeHtml(notice.text)}</p>\n`
  const list = tokens.length === 0 ? '<p class="muted">You have no personal access tokens.</p>' : `<ul>\n${tokens.map((token) => tokenItem(token, csrf)).join('\n')}\n</ul>`
  const scopeBoxes = PERSONAL_TOKEN_SCOPES.map((scope) =>
    `<label><input type="checkbox" name="scopes" value="${scope}"${checked.has(scope) ? ' checked' : ''}>${scope}: <span class="muted">${escapeHtml(SCOPE_DESCRIPTIONS[scope])}</span></label>`).join('\n')
  const teamOptions = [`<option value="">All my teams</option>`, ...teams.map((team) =>
    `<option value="${escapeHtml(team.id)}"${form.teamId === team.id ? ' selected' : ''}>${escapeHtml(team.name)}</option>`)].join('')
  return pageLayout('Personal access tokens', `<h1>Personal access tokens</h1>
${shown}${note}<p class="muted">A token lets a script or a CI job call this service's API as you, with the scopes you choose: send it as
<code>Authorization: Bearer service_pat_…</code>. It stops working when it expires, when you delete it, and when your password changes.</p>
<h2>Your tokens</h2>
${list}
<h2>Create a token</h2>
<form method="post" action="${TOKENS_PAGE}">
${csrf}
<label for="name">Name</label>
<input id="name" name="name" maxlength="100" required value="${escapeHtml(form.name ?? '')}">
<fieldset><legend>Scopes</legend>
${scopeBoxes}
</fieldset>
<label for="team_id">Team</label>
<select id="team_id" name="team_id">${teamOptions}</select>
<label for="expires_in_days">Expires in (days, 1–365)</label>
<input id="expires_in_days" name="expires_in_days" type="number" min="1" max="365" required value="${escapeHtml(form.days ?? '30')}">
<div class="actions"><button class="primary" type="submit">Create token</button></div>
</form>
<p class="muted"><a href="${ACCOUNT_PAGES.account}">Back to your account</a></p>`)
}
