import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { providerSignIn, providerUser, startProviderLoginApp, type ProviderLoginApp, type SignIn } from '../helpers/fake-provider.js'
import { rawRows } from '../helpers/sql.js'

const SECRET = 'csecret'

describe.each(DIALECTS)('provider login: what is kept secret on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp
  let adminCookie: string

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    harness = await startProviderLoginApp(ctx)
    const registered = await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })
    expect(registered.statusCode).toBe(201)
    adminCookie = sessionCookie(registered)!
  })
  afterAll(async () => {
    await ctx.close()
    await harness.provider.close()
  })

  /** Every row of every table, as text. */
  async function everyStoredText(): Promise<Array<{ table: string; text: string }>> {
    const { database } = harness.app.services
    const tables = dialect === 'sqlite'
      ? await rawRows(database, sql`select name from sqlite_master where type = 'table'`)
      : await rawRows(database, sql`select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`)
    const names = tables.map(([name]) => String(name))
    expect(names).toEqual(expect.arrayContaining(['users', 'sessions', 'audit_events', 'settings']))
    const found: Array<{ table: string; text: string }> = []
    for (const table of names) {
      for (const row of await rawRows(database, sql`select * from ${sql.identifier(table)}`)) {
        found.push({ table, text: row.map((value) => (value instanceof Date ? value.toISOString() : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value))).join('\u0000') })
      }
    }
    return found
  }

  /** Signs in a new provider user; the flow and the access token the provider issued for it. */
  async function signIn(): Promise<{ flow: SignIn; accessToken: string; code: string }> {
    harness.provider.configure({ user: providerUser() })
    const flow = await providerSignIn(browser(), harness)
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    const code = new URL(flow.callback!.url).searchParams.get('code')!
    const issued = harness.provider.tokens.filter((token) => token.code === code)
    expect(issued).toHaveLength(1)
    return { flow, accessToken: issued[0]!.accessToken, code }
  }

  describe("the provider's access token", () => {
    it('is used once for /user and once for /user/emails', async () => {
      const { accessToken } = await signIn()
      const calls = harness.provider.callsWithToken(accessToken)
      expect(calls.map((call) => `${call.method} ${call.path}`).sort()).toEqual(['GET /user', 'GET /user/emails'])
    })

    it('is stored nowhere: no column of any table holds it, nor does the audit trail', async () => {
      const tokens: string[] = []
      for (let i = 0; i < 2; i++) tokens.push((await signIn()).accessToken)
      const stored = await everyStoredText()
      expect(stored.filter(({ table }) => table === 'audit_events').length).toBeGreaterThan(0)
      for (const token of tokens) {
        const secretPart = token.slice('gho_'.length)
        expect(stored.filter(({ text }) => text.includes(secretPart)).map(({ table }) => table)).toEqual([])
      }
    })

    it('nor the authorization code', async () => {
      const { code } = await signIn()
      expect((await everyStoredText()).filter(({ text }) => text.includes(code)).map(({ table }) => table)).toEqual([])
    })
  })

  describe('the client secret', () => {
    it('is sent to the token endpoint only, with the client id and the code', async () => {
      const { code, flow } = await signIn()
      const exchange = harness.provider.calls.filter((call) => call.path === '/login/oauth/access_token' && JSON.stringify(call).includes(code))
      expect(exchange).toHaveLength(1)
      const { body = {}, headers } = exchange[0]!
      const basic = /^basic\s+(\S+)$/i.exec(String(headers.authorization ?? ''))
      const [basicId, basicSecret] = basic === null ? [] : Buffer.from(basic[1]!, 'base64').toString().split(':').map(decodeURIComponent)
      expect(body.client_secret ?? basicSecret).toBe(SECRET)
      expect(body.client_id ?? basicId).toBe('cid')
      expect(body.code).toBe(code)
      expect(exchange[0]!.method).toBe('POST')
      for (const hop of flow.hops) expect(`${hop.url} ${hop.location ?? ''}`).not.toContain(SECRET)
      const elsewhere = harness.provider.calls.filter((call) => call.path !== '/login/oauth/access_token' && JSON.stringify(call).includes(SECRET))
      expect(elsewhere).toEqual([])
    })

    it('is stored encrypted', async () => {
      const rows = await rawRows(harness.app.services.database, sql`select value, encrypted from settings where key = 'provider.oauth.client_secret'`)
      expect(rows).toHaveLength(1)
      const [value, encrypted] = rows[0]!
      expect(Boolean(encrypted)).toBe(true)
      expect(String(value)).not.toContain(SECRET)
      expect(String(value).length).toBeGreaterThan(SECRET.length)
    })

    it('is never answered by the settings API (value null, is_set true)', async () => {
      const get = (url: string) => fetch(`${harness.base}${url}`, { headers: { cookie: adminCookie } })
      const one = await get('/api/settings/provider.oauth.client_secret')
      expect(one.status).toBe(200)
      expect(((await one.json()) as { data: { setting: unknown } }).data.setting).toMatchObject({ key: 'provider.oauth.client_secret', encrypted: true, value: null, is_set: true })
      for (const url of ['/api/settings', '/api/settings/groups/provider-oauth']) {
        const response = await get(url)
        expect(response.status).toBe(200)
        expect(await response.text()).not.toContain(SECRET)
      }
    })
  })
})
