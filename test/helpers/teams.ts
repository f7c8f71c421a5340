import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { onTestFinished } from 'vitest'
import { register, sessionCookie } from './accounts.js'

/** Per-IP limits generous enough for files that register dozens of users (the limits stay on). */
export const ROOMY_LIMITS = { loginOrRegister: { max: 10_000, windowMs: 60_000 } }

export interface Account { id: string; username: string; email: string; cookie: string }

/** A team as the caller sees it. */
export interface TeamBody {
  id: string
  name: string
  slug: string
  description: string | null
  owner_id: string
  is_default: boolean
  member_count: number
  created_at: string
  updated_at: string
  role: 'team_admin' | 'team_user' | null
  is_owner: boolean
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type Call = (method: Method, url: string, account?: Account, payload?: unknown) => Promise<LightMyRequestResponse>

/** Registers through the API; registration signs the user in, so the account carries its cookie. */
export async function signUp(app: FastifyInstance, username: string): Promise<Account> {
  const email = `${username}@example.com`
  const response = await register(app, { username, email })
  const cookie = sessionCookie(response)
  if (response.statusCode !== 201 || cookie === undefined) throw new Error(`registration failed: ${response.statusCode} ${response.body}`)
  return { id: response.json().data.user.id, username, email, cookie }
}

/** `app.inject` with the account's session cookie, when one is given. */
export function client(app: FastifyInstance): Call {
  return (method, url, account, payload) =>
    app.inject({
      method,
      url,
      headers: account === undefined ? {} : { cookie: account.cookie },
      ...(payload === undefined ? {} : { payload: payload as object }),
    })
}

/** POST /api/teams; fails loudly unless it answers 201. */
export async function createTeam(call: Call, owner: Account, name: string, description?: string): Promise<TeamBody> {
  const response = await call('POST', '/api/teams', owner, description === undefined ? { name } : { name, description })
  if (response.statusCode !== 201) throw new Error(`team creation failed: ${response.statusCode} ${response.body}`)
  return response.json().data.team
}

/** POST /api/teams/:id/members by username; fails loudly unless it answers 201. */
export async function addMember(call: Call, teamId: string, by: Account, member: Account, role: 'team_admin' | 'team_user'): Promise<void> {
  const response = await call('POST', `/api/teams/${teamId}/members`, by, { login: member.username, role })
  if (response.statusCode !== 201) throw new Error(`adding a member failed: ${response.statusCode} ${response.body}`)
}

/** GET /api/teams/:id as `account`; the team, or undefined when it is not visible. */
export async function teamAs(call: Call, teamId: string, account: Account): Promise<TeamBody | undefined> {
  const response = await call('GET', `/api/teams/${teamId}`, account)
  return response.statusCode === 200 ? response.json().data.team : undefined
}

/** A team with its owner, a second team_admin, a team_user, and someone outside it. */
export interface Crew { team: TeamBody; owner: Account; teamAdmin: Account; teamUser: Account; outsider: Account }

export async function crew(call: Call, fresh: () => Promise<Account>, name: string): Promise<Crew> {
  const [owner, teamAdmin, teamUser, outsider] = [await fresh(), await fresh(), await fresh(), await fresh()]
  const team = await createTeam(call, owner, name, 'Original')
  await addMember(call, team.id, owner, teamAdmin, 'team_admin')
  await addMember(call, team.id, owner, teamUser, 'team_user')
  return { team, owner, teamAdmin, teamUser, outsider }
}

const TEAM_SETTING_DEFAULTS = { 'team.creation_limit': 3, 'team.member_limit': 10 } as const

/** Sets a team limit for the rest of the current test, back to its default afterwards. */
export async function withTeamSetting(app: FastifyInstance, key: keyof typeof TEAM_SETTING_DEFAULTS, value: number): Promise<void> {
  await app.services.settings.update([{ key, value }])
  onTestFinished(async () => {
    await app.services.settings.update([{ key, value: TEAM_SETTING_DEFAULTS[key] }])
  })
}
