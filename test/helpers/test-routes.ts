import type { FastifyPluginAsync } from 'fastify'
import { Type } from 'typebox'
import type { CredentialVerifiers, UserCaller } from '../../src/auth/caller.js'
import type { TeamRole } from '../../src/auth/permissions.js'
import { policy } from '../../src/auth/policies.js'
import { Ok } from '../../src/http/envelope.js'

/**
 * Test-only routes of every policy kind, and credential checks backed by plain tables, so the
 * policy mechanism is exercised before the capabilities that issue real credentials exist.
 */

const CallerView = Ok(Type.Object({ kind: Type.String(), id: Type.String() }))
const NameBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 50 }) }, { additionalProperties: false })
const doc = (summary: string) => ({ tags: ['Test'], summary, response: { 200: CallerView } })

export const policyTestRoutes: FastifyPluginAsync = async (app) => {
  const answer = async (request: { caller: import('../../src/auth/caller.js').Caller | null }) => {
    const caller = request.caller
    const id = caller === null ? 'anonymous' : caller.kind === 'user' ? caller.userId : caller.kind === 'satellite' ? caller.satelliteId : caller.kind === 'registration' ? caller.tokenId : 'scraper'
    return { success: true as const, data: { kind: caller?.kind ?? 'none', id } }
  }
  app.get('/api/test/public', { config: { auth: policy.public() }, schema: doc('public') }, answer)
  app.get('/api/test/session', { config: { auth: policy.session() }, schema: doc('session') }, answer)
  app.post('/api/test/session', { config: { auth: policy.session() }, schema: { ...doc('session body'), body: NameBody } }, answer)
  app.get('/api/test/dual', { config: { auth: policy.dual('teams:read') }, schema: doc('dual') }, answer)
  app.get('/api/test/admin', { config: { auth: policy.session({ permission: 'users.view' }) }, schema: doc('admin') }, answer)
  app.post('/api/test/admin', { config: { auth: policy.session({ permission: 'users.view' }) }, schema: { ...doc('admin body'), body: NameBody } }, answer)
  app.get('/api/test/teams/:teamId/manage', {
    config: { auth: policy.session({ teamPermission: 'team.members.manage' }) },
    schema: { ...doc('team manage'), params: Type.Object({ teamId: Type.String() }) },
  }, answer)
  app.get('/api/test/teams/:teamId/view', {
    config: { auth: policy.dual('teams:read', { teamPermission: 'team.view' }) },
    schema: { ...doc('team view'), params: Type.Object({ teamId: Type.String() }) },
  }, answer)
  app.get('/api/test/satellite', { config: { auth: policy.satellite() }, schema: doc('satellite') }, answer)
  app.post('/api/test/register', { config: { auth: policy.registrationToken() }, schema: { ...doc('registration'), body: NameBody } }, answer)
}

const user = (userId: string, role: UserCaller['role'], via: UserCaller['via'], scopes?: string[]): UserCaller => ({
  kind: 'user', via, userId, role, credentialId: `${via}-${userId}`, ...(scopes ? { scopes } : {}),
})

export const SESSIONS: Record<string, UserCaller> = {
  'admin-session': user('admin', 'global_admin', 'session'),
  'user-session': user('alice', 'global_user', 'session'),
  'bob-session': user('bob', 'global_user', 'session'),
  'carol-session': user('carol', 'global_user', 'session'),
}

export const TOKENS: Record<string, UserCaller> = {
  'teams-token': user('alice', 'global_user', 'bearer', ['teams:read']),
  'mcp-token': user('alice', 'global_user', 'bearer', ['mcp:read']),
  'admin-token': user('admin', 'global_admin', 'bearer', ['teams:read']),
}

/** team-1: alice is team_admin, bob team_user; carol is not a member. */
const MEMBERSHIPS: Record<string, TeamRole> = { 'alice:team-1': 'team_admin', 'bob:team-1': 'team_user' }

export const tableCredentials: Partial<CredentialVerifiers> = {
  session: async (id) => SESSIONS[id] ?? null,
  bearer: async (token) => TOKENS[token] ?? null,
  satelliteKey: async (secret) => (secret === 'good-key' ? { kind: 'satellite', satelliteId: 'sat-1', teamId: null, disabled: false } : null),
  registrationToken: async (token, scope) =>
    token === 'good.jwt.value' ? { kind: 'registration', tokenId: 'reg-1', scope, teamId: null } : null,
  teamRole: async (userId, teamId) => MEMBERSHIPS[`${userId}:${teamId}`] ?? null,
}
