import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { eq } from 'drizzle-orm'
import type { Account } from '../helpers/teams.js'

/** The shape of a token as `POST /api/users/me/tokens` and the page make it. */
export const TOKEN_SHAPE = /^service_pat_[A-Za-z0-9_-]{43}$/

export interface NewToken {
  name?: string
  scopes?: string[]
  team_id?: string
  expires_in_days?: number
}

/** POST /api/users/me/tokens with the account's session. */
export function createToken(app: FastifyInstance, account: Pick<Account, 'cookie'>, body: NewToken | Record<string, unknown> = {}): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST', url: '/api/users/me/tokens', headers: { cookie: account.cookie },
    payload: { name: 'ci', scopes: ['user:read', 'teams:read'], expires_in_days: 30, ...body },
  })
}

/** Creates a token and answers its value and id; fails loudly unless it answers 201. */
export async function tokenFor(app: FastifyInstance, account: Pick<Account, 'cookie'>, body: NewToken = {}): Promise<{ token: string; id: string }> {
  const response = await createToken(app, account, body)
  if (response.statusCode !== 201) throw new Error(`token creation failed: ${response.statusCode} ${response.body}`)
  const { token, id } = response.json().data
  return { token, id }
}

/** GET `url` with the token as a bearer credential. */
export function getWith(app: FastifyInstance, url: string, token: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } })
}

/** The stored row of a token, read through the app's own connection. */
export async function storedRow(app: FastifyInstance, id: string) {
  const { db, t } = app.services.database
  const [row] = await db.select().from(t.personalTokens).where(eq(t.personalTokens.id, id))
  return row
}

/** Every audit event of a type, oldest first. */
export async function auditEvents(app: FastifyInstance, type: string) {
  const { db, t } = app.services.database
  const rows = await db.select().from(t.auditEvents).where(eq(t.auditEvents.type, type))
  return rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
}
