import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROLE_PERMISSIONS } from '../../src/auth/permissions.js'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

async function signUp(app: FastifyInstance, username: string): Promise<string> {
  const response = await register(app, { username, email: `${username}@example.com` })
  const cookie = sessionCookie(response)
  if (response.statusCode !== 201 || cookie === undefined) throw new Error(`registration failed: ${response.statusCode} ${response.body}`)
  return cookie
}

describe.each(DIALECTS)('GET /api/roles on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let adminCookie: string
  let userCookie: string
  const get = (cookie?: string) => app.inject({ method: 'GET', url: '/api/roles', headers: cookie === undefined ? {} : { cookie } })

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    adminCookie = await signUp(app, 'roles_admin')
    userCookie = await signUp(app, 'roles_user')
  })
  afterAll(() => ctx.close())

  it('401 without a session; 403 for a global_user, naming roles.manage', async () => {
    const anonymous = await get()
    expect(anonymous.statusCode).toBe(401)
    expect(anonymous.json().code).toBe('UNAUTHORIZED')
    const forbidden = await get(userCookie)
    expect(forbidden.statusCode).toBe(403)
    expect(forbidden.json()).toMatchObject({ code: 'FORBIDDEN', details: { required_permission: 'roles.manage' } })
  })

  it('answers every role with its scope and exactly the permissions the code enforces', async () => {
    const response = await get(adminCookie)
    expect(response.statusCode).toBe(200)
    const { roles } = response.json().data as { roles: Array<{ id: keyof typeof ROLE_PERMISSIONS; scope: string; permissions: string[] }> }
    expect(roles.map((role) => [role.id, role.scope])).toEqual([
      ['global_admin', 'global'],
      ['global_user', 'global'],
      ['team_admin', 'team'],
      ['team_user', 'team'],
    ])
    for (const role of roles) expect(role.permissions, role.id).toEqual([...ROLE_PERMISSIONS[role.id]])
  })

  it('matches the role table', async () => {
    const roles = Object.fromEntries((await get(adminCookie)).json().data.roles.map((role: { id: string; permissions: string[] }) => [role.id, new Set(role.permissions)]))
    const table: Record<string, string[]> = {
      'users.view users.edit users.delete roles.manage settings.view settings.edit audit.view email.test plugins.view teams.view_all': ['global_admin'],
      'mcp.servers.manage mcp.categories.manage mcp.versions.manage satellites.view satellites.manage': ['global_admin'],
      'teams.create': ['global_admin', 'global_user'],
      'team.view team.members.view team.installations.view': ['global_admin', 'team_admin', 'team_user'],
      'team.edit team.delete team.members.manage team.satellites.view team.satellites.manage': ['global_admin', 'team_admin'],
      'team.installations.manage team.servers.manage': ['global_admin', 'team_admin'],
      'mcp.servers.read mcp.categories.view': ['global_admin', 'global_user', 'team_admin', 'team_user'],
    }
    for (const [permissions, holders] of Object.entries(table)) {
      for (const permission of permissions.split(' ')) {
        for (const role of ['global_admin', 'global_user', 'team_admin', 'team_user']) {
          expect(roles[role].has(permission), `${role} ${permission}`).toBe(holders.includes(role))
        }
      }
    }
  })
})
