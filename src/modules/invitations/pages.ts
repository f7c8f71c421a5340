import type { InvitationRow, InvitationWithNames } from '../../db/repositories/invitations.js'
import { escapeHtml, linkButtons, messagePage, pageLayout, type PageLink } from '../../lib/html.js'
import { ACCOUNT_PAGES, SIGN_IN_LINK } from '../auth/page-links.js'
import type { Notice } from '../auth/pages.js'
import { ACCEPT_PAGE_PREFIX } from './links.js'

/**
 * The invitation pages the backend serves for when no frontend is configured: the page behind an
 * invitation's link, and the page where a team's admins invite, list and revoke. No script, in the
 * layout and under the policy of the other account pages.
 */

/** The team invitations page, linked from the account page. */
export const TEAM_INVITATIONS_PAGE = '/api/auth/account/teams'
/** Where a visitor goes on from these pages (and signs out, to sign in as someone else). */
export const ACCOUNT_LINK: PageLink = { href: ACCOUNT_PAGES.account, label: 'Your account' }

const ROLE_NAMES = { team_admin: 'team admin', team_user: 'team member' } as const
const roleName = (role: keyof typeof ROLE_NAMES) => ROLE_NAMES[role]
const csrfField = (csrfToken: string) => `<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">`

function noticeHtml(shown: Notice | undefined): string {
  if (shown === undefined) return ''
  const link = shown.link === undefined ? '' : ` <a href="${escapeHtml(shown.link.href)}">${escapeHtml(shown.link.label)}</a>`
  return `<p class="${shown.tone}"${shown.tone === 'error' ? ' role="alert"' : ''}>${escapeHtml(shown.text)}${link}</p>\n`
}

/** What the person signed in (or not) may do with the invitation. */
export type AcceptState =
  | { kind: 'signed-out'; csrfToken: string; registration: boolean; username?: string }
  | { kind: 'other-address'; signedInAs: string }
  | { kind: 'unverified'; resendHref?: string }
  | { kind: 'member' }
  | { kind: 'can-accept'; csrfToken: string }

/** The page of an invitation link: what it invites to, then what `state` lets the visitor do. */
export function acceptPage(invitation: InvitationWithNames, token: string, state: AcceptState, shown?: Notice): string {
  const action = `${ACCEPT_PAGE_PREFIX}${encodeURIComponent(token)}`
  const intro = `<h1>Join ${escapeHtml(invitation.teamName)}</h1>
${noticeHtml(shown)}<p><strong>${escapeHtml(invitation.inviterUsername)}</strong> invited <strong>${escapeHtml(invitation.email)}</strong> to the team
<strong>${escapeHtml(invitation.teamName)}</strong> as ${roleName(invitation.role)}.</p>
<p class="muted">The invitation works once, until ${escapeHtml(invitation.expiresAt.toUTCString())}.</p>\n`
  return pageLayout(`Join ${invitation.teamName}`, intro + acceptBody(invitation, action, state))
}

function acceptBody(invitation: InvitationWithNames, action: string, state: AcceptState): string {
  switch (state.kind) {
    case 'can-accept':
      return `<form method="post" action="${escapeHtml(action)}">
${csrfField(state.csrfToken)}
<div class="actions"><button class="primary" type="submit">Accept and join the team</button></div>
</form>`
    case 'member':
      return `<p class="success">You are a member of this team already.</p>\n${linkButtons([ACCOUNT_LINK])}`
    case 'other-address':
      return `<p class="error" role="alert">You are signed in as ${escapeHtml(state.signedInAs)}, but only the account with the invited address may accept. ` +
        'Sign out, then sign in with that account and open this link again.</p>\n' + linkButtons([ACCOUNT_LINK])
    case 'unverified':
      return '<p class="error" role="alert">Your email address is not verified yet: verify it (the link in the verification mail), then open this link again.</p>\n' +
        linkButtons(state.resendHref === undefined ? [ACCOUNT_LINK] : [{ href: state.resendHref, label: 'Send a new verification mail' }, ACCOUNT_LINK])
    case 'signed-out':
      return `<p>To accept, sign in with the account of ${escapeHtml(invitation.email)}, then open this link again.</p>
${linkButtons([SIGN_IN_LINK])}
${state.registration ? registerForm(invitation.email, action, state.csrfToken, state.username) : ''}`
  }
}

/** No account yet: one with the invited address, verified by the invitation itself. */
function registerForm(email: string, action: string, csrfToken: string, username = ''): string {
  return `<h2>No account yet?</h2>
<p class="muted">Create one for ${escapeHtml(email)}: the invitation proves the address, so no verification mail is needed.</p>
<form method="post" action="${escapeHtml(`${action}/register`)}">
${csrfField(csrfToken)}
<input type="email" name="email" value="${escapeHtml(email)}" autocomplete="username" hidden disabled>
<label for="username">Username</label>
<input id="username" name="username" autocomplete="nickname" minlength="3" maxlength="50" pattern="[a-zA-Z0-9_\\-]+" required value="${escapeHtml(username)}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>
<div class="actions"><button type="submit">Create the account</button></div>
</form>`
}

/** The answer to an accepted invitation. */
export function joinedPage(teamName: string): string {
  return messagePage({
    title: 'Invitation accepted',
    message: `You are now a member of ${teamName}.`,
    tone: 'success',
    hint: 'The team is yours to use from now on.',
    links: [ACCOUNT_LINK],
  })
}

/** A team the signed-in user manages members of, with its pending invitations. */
export interface ManagedTeam {
  id: string
  name: string
  pending: Array<InvitationRow & { inviterUsername: string }>
}

/** What the team invitations page shows. */
export interface TeamInvitationsView {
  teams: ManagedTeam[]
  inviteToken: string
  revokeToken: string
  notice?: Notice
  /** The link of an invitation just created: shown this once. */
  created?: { email: string; acceptUrl: string; mailSent: boolean }
}

/** Each managed team with its invite form and pending invitations; a new link, once, on top. */
export function teamInvitationsPage({ teams, inviteToken, revokeToken, notice: shown, created }: TeamInvitationsView): string {
  const createdHtml = created === undefined ? '' : `<div class="success" role="status"><p>${escapeHtml(created.email)} is invited. ${created.mailSent
    ? 'A mail with the link is on its way.' : 'No mail was sent (mail sending is off or failed): pass this link on yourself.'} It is shown only now.</p>
<p><input readonly aria-label="Invitation link" value="${escapeHtml(created.acceptUrl)}"></p></div>\n`
  const body = teams.length === 0
    ? '<p class="muted">You manage the members of no team: only a team admin of a team other than a personal (default) team can invite.</p>'
    : teams.map((team) => teamSection(team, inviteToken, revokeToken)).join('\n')
  return pageLayout('Team invitations', `<h1>Team invitations</h1>
${noticeHtml(shown)}${createdHtml}${body}
${linkButtons([ACCOUNT_LINK])}`)
}

function teamSection(team: ManagedTeam, inviteToken: string, revokeToken: string): string {
  const pending = team.pending.length === 0
    ? '<p class="muted">No pending invitations.</p>'
    : `<ul>\n${team.pending.map((invitation) => `<li>${escapeHtml(invitation.email)} (${roleName(invitation.role)}, until ${escapeHtml(invitation.expiresAt.toUTCString())})
<form method="post" action="${TEAM_INVITATIONS_PAGE}/revoke">
${csrfField(revokeToken)}
<input type="hidden" name="team_id" value="${escapeHtml(team.id)}">
<input type="hidden" name="invitation_id" value="${escapeHtml(invitation.id)}">
<button type="submit">Revoke</button>
</form></li>`).join('\n')}\n</ul>`
  const field = (name: string) => `invite-${name}-${escapeHtml(team.id)}`
  return `<section>
<h2>${escapeHtml(team.name)}</h2>
<form method="post" action="${TEAM_INVITATIONS_PAGE}/invite">
${csrfField(inviteToken)}
<input type="hidden" name="team_id" value="${escapeHtml(team.id)}">
<label for="${field('email')}">Email address</label>
<input id="${field('email')}" name="email" type="email" maxlength="255" required>
<label for="${field('role')}">Role</label>
<select id="${field('role')}" name="role">
<option value="team_user" selected>team member</option>
<option value="team_admin">team admin</option>
</select>
<div class="actions"><button class="primary" type="submit">Invite</button></div>
</form>
<h3>Pending invitations</h3>
${pending}
</section>`
}
