import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { setCookieLines } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'
import { inputValue, isHtml } from '../helpers/oauth.js'
import { client, createTeam, signUp, type Account } from '../helpers/teams.js'
import { getWith, TOKEN_SHAPE, tokenFor } from './helpers.js'

/**
 * The tokens page over app.inject: a strict page, no script; the forms' CSRF token bound to the
 * session; refusals shown on the page for a browser and as the envelope for anyone else.
 */
const PAGE = '/api/auth/account/tokens'
const HTML = 'text/html,application/xhtml+xml,*/*;q=0.8'
const ORIGIN = 'http://localhost:3000'

function expectPage(response: LightMyRequestResponse, status: number) {
  expect(response.statusCode, response.body).toBe(status)
  expect(isHtml(response)).toBe(true)
  const csp = String(response.headers['content-security-policy'])
  expect(csp).toContain("default-src 'none'")
  expect(csp).not.toContain('script-src')
  expect(response.body).not.toContain('<script')
  expect(response.headers['cache-control']).toBe('no-store')
}

describe.each(DIALECTS)('the tokens page on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let counter = 0
  const fresh = () => signUp(app, `patp_${dialect}_${++counter}`)

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } })).app
    await signUp(app, `patp_admin_${dialect}`)
  })
  afterAll(() => ctx.close())

  /** Opens the page as `account`: its body, and the cookies a form post must carry. */
  async function open(account: Account): Promise<{ page: LightMyRequestResponse; cookie: string; csrf: string }> {
    const page = await app.inject({ method: 'GET', url: PAGE, headers: { cookie: account.cookie, accept: HTML } })
    expectPage(page, 200)
    const form = setCookieLines(page).find((line) => line.startsWith('account_form='))!.split(';')[0]!
    return { page, cookie: `${account.cookie}; ${form}`, csrf: inputValue(page.body, 'csrf_token')! }
  }

  const post = (url: string, cookie: string, fields: Record<string, string | string[]>, headers: Record<string, string> = { accept: HTML, origin: ORIGIN }) => {
    const body = new URLSearchParams()
    for (const [key, value] of Object.entries(fields)) for (const each of [value].flat()) body.append(key, each)
    return app.inject({ method: 'POST', url, headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers }, payload: body.toString() })
  }

  it('needs a session: 401, a page with a way to sign in for a browser', async () => {
    const page = await app.inject({ method: 'GET', url: PAGE, headers: { accept: HTML } })
    expectPage(page, 401)
    expect(page.body).toContain('href="/api/auth/sign-in"')
    expect((await app.inject({ method: 'GET', url: PAGE })).json().code).toBe('UNAUTHORIZED')
  })

  it('the account page links to it', async () => {
    const account = await fresh()
    const page = await app.inject({ method: 'GET', url: '/api/auth/account', headers: { cookie: account.cookie, accept: HTML } })
    expect(page.body).toContain(`href="${PAGE}"`)
  })

  it('creates a token shown on the answer only, and lists the caller\'s teams to bind it to', async () => {
    const account = await fresh()
    const team = await createTeam(client(app), account, `Page team ${dialect}`)
    const { page, cookie, csrf } = await open(account)
    expect(page.body).toContain(`<option value="${team.id}">Page team ${dialect}</option>`)
    const created = await post(PAGE, cookie, { csrf_token: csrf, name: 'page token', scopes: ['user:read', 'teams:read'], team_id: team.id, expires_in_days: '10' })
    expectPage(created, 201)
    const token = /<code id="new-token">([^<]+)<\/code>/.exec(created.body)![1]!
    expect(token).toMatch(TOKEN_SHAPE)
    expect((await getWith(app, `/api/teams/${team.id}`, token)).statusCode).toBe(200)
    const again = await open(account)
    expect(again.page.body).toContain('page token')
    expect(again.page.body).toContain(`team Page team ${dialect}`)
    expect(again.page.body).not.toContain(token)
  })

  it('shows a refused form again with the reason and what was typed, creating nothing', async () => {
    const account = await fresh()
    const outsiderTeam = await createTeam(client(app), await fresh(), `Not mine ${dialect}`)
    const { cookie, csrf } = await open(account)
    const cases: Array<[Record<string, string | string[]>, number, string]> = [
      [{ name: '', scopes: 'user:read', expires_in_days: '5' }, 400, 'Give the token a name'],
      [{ name: 'n', expires_in_days: '5' }, 400, 'Choose at least one'],
      [{ name: 'n', scopes: ['user:read', 'offline_access'], expires_in_days: '5' }, 400, 'Choose at least one'],
      [{ name: 'n', scopes: 'user:read', expires_in_days: '400' }, 400, 'from 1 to 365'],
      [{ name: 'n', scopes: 'user:read', expires_in_days: '1e2' }, 400, 'from 1 to 365'],
      [{ name: 'kept name', scopes: 'user:read', expires_in_days: '5', team_id: outsiderTeam.id }, 400, 'team_id must be a team you are a member of'],
      [{ name: 'n', scopes: 'user:read', expires_in_days: '5', surprise: 'x' }, 400, 'not one this page sends'],
    ]
    for (const [fields, status, text] of cases) {
      const refused = await post(PAGE, cookie, { csrf_token: csrf, ...fields })
      expectPage(refused, status)
      expect(refused.body, JSON.stringify(fields)).toContain(text)
      expect(refused.body).not.toContain('id="new-token"')
    }
    expect((await post(PAGE, cookie, { csrf_token: csrf, name: 'kept name', scopes: 'user:read', expires_in_days: '0' })).body).toContain('value="kept name"')
    // Anyone else gets the envelope.
    const json = await post(PAGE, cookie, { csrf_token: csrf, name: '', scopes: 'user:read', expires_in_days: '5' }, { origin: ORIGIN })
    expect(json.statusCode).toBe(400)
    expect(json.json().code).toBe('VALIDATION_ERROR')
    expect((await client(app)('GET', '/api/users/me/tokens', account)).json().data.tokens).toEqual([])
  })

  it('refuses a form without its CSRF token, with another session\'s, or from another site', async () => {
    const account = await fresh()
    const other = await fresh()
    const { cookie, csrf } = await open(account)
    const theirs = await open(other)
    const fields = { name: 'n', scopes: 'user:read', expires_in_days: '5' }
    expectPage(await post(PAGE, cookie, fields), 403)
    const stolen = await post(PAGE, cookie, { ...fields, csrf_token: theirs.csrf })
    expectPage(stolen, 403)
    expect(stolen.body).toContain('This form had expired')
    const crossSite = await post(PAGE, cookie, { ...fields, csrf_token: csrf }, { origin: 'https://evil.example' })
    expect(crossSite.statusCode).toBe(403)
    const json = await post(PAGE, cookie, { ...fields, csrf_token: 'nope' }, {})
    expect(json.json().code).toBe('INVALID_CSRF_TOKEN')
    expect((await client(app)('GET', '/api/users/me/tokens', account)).json().data.tokens).toEqual([])
  })

  it('deletes with the button\'s form; another user\'s token is not found', async () => {
    const account = await fresh()
    const stranger = await fresh()
    const mine = await tokenFor(app, account, { name: 'to delete' })
    const theirs = await tokenFor(app, stranger)
    const { page, cookie, csrf } = await open(account)
    expect(page.body).toContain(`action="${PAGE}/${mine.id}/delete"`)
    const foreign = await post(`${PAGE}/${theirs.id}/delete`, cookie, { csrf_token: csrf })
    expectPage(foreign, 404)
    expect((await getWith(app, '/api/users/me', theirs.token)).statusCode).toBe(200)
    expectPage(await post(`${PAGE}/${mine.id}/delete`, cookie, {}), 403)
    expect((await getWith(app, '/api/users/me', mine.token)).statusCode).toBe(200)
    const deleted = await post(`${PAGE}/${mine.id}/delete`, cookie, { csrf_token: csrf })
    expect(deleted.statusCode).toBe(303)
    expect(deleted.headers.location).toBe(`${PAGE}?deleted=1`)
    expect((await getWith(app, '/api/users/me', mine.token)).statusCode).toBe(401)
  })

  it('a token is no session: the page refuses it', async () => {
    const account = await fresh()
    const { token } = await tokenFor(app, account)
    expect((await app.inject({ method: 'GET', url: PAGE, headers: { authorization: `Bearer ${token}` } })).statusCode).toBe(401)
  })
})
