import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { register, sessionCookie } from '../helpers/accounts.js'
import type { Account, Call } from '../helpers/teams.js'

/** An invitation as a team's admins see it. */
export interface InvitationBody {
  id: string
  team_id: string
  email: string
  role: 'team_admin' | 'team_user'
  status: 'pending' | 'accepted' | 'revoked' | 'expired'
  invited_by: { id: string; username: string }
  created_at: string
  expires_at: string
  accepted_at: string | null
  revoked_at: string | null
}

export const INVITATION_KEYS = ['accepted_at', 'created_at', 'email', 'expires_at', 'id', 'invited_by', 'revoked_at', 'role', 'status', 'team_id']

/** POST /api/teams/:teamId/invitations. */
export function invite(call: Call, teamId: string, by: Account | undefined, email: string, role = 'team_user'): Promise<LightMyRequestResponse> {
  return call('POST', `/api/teams/${teamId}/invitations`, by, { email, role })
}

/** The token at the end of an accept link (either form of it). */
export function tokenOf(acceptUrl: string): string {
  const token = /\/invitations\/([A-Za-z0-9_-]{43})$/.exec(acceptUrl)?.[1]
  if (token === undefined) throw new Error(`not an accept link: ${acceptUrl}`)
  return token
}

/** Invites `email`; fails loudly unless it answers 201; the invitation and its token. */
export async function invited(call: Call, teamId: string, by: Account, email: string, role = 'team_user'): Promise<{ invitation: InvitationBody; token: string; acceptUrl: string; mailSent: boolean }> {
  const response = await invite(call, teamId, by, email, role)
  if (response.statusCode !== 201) throw new Error(`invitation failed: ${response.statusCode} ${response.body}`)
  const { invitation, accept_url: acceptUrl, mail_sent: mailSent } = response.json().data
  return { invitation, token: tokenOf(acceptUrl), acceptUrl, mailSent }
}

/** Registers `username` at `<username>@example.com` with the invitation token: the address is then verified. */
export async function registerInvited(app: FastifyInstance, username: string, token: string, email = `${username}@example.com`): Promise<Account & { verified: boolean }> {
  const response = await register(app, { username, email, invitation_token: token } as Parameters<typeof register>[1])
  const cookie = sessionCookie(response)
  if (response.statusCode !== 201 || cookie === undefined) throw new Error(`registration failed: ${response.statusCode} ${response.body}`)
  const user = response.json().data.user
  return { id: user.id, username, email, cookie, verified: user.email_verified }
}

/** POST /api/invitations/:token/accept as `account`. */
export function accept(call: Call, token: string, account: Account | undefined): Promise<LightMyRequestResponse> {
  return call('POST', `/api/invitations/${token}/accept`, account)
}

/** The team's invitations as `by` lists them (`status` as the query says). */
export async function listed(call: Call, teamId: string, by: Account, query = ''): Promise<InvitationBody[]> {
  const response = await call('GET', `/api/teams/${teamId}/invitations${query}`, by)
  if (response.statusCode !== 200) throw new Error(`listing failed: ${response.statusCode} ${response.body}`)
  return response.json().data.invitations
}
