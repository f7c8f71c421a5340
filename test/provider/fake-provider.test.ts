import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { browser } from '../helpers/browser.js'
import { providerUser, startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js'

const CALLBACK = 'http://127.0.0.1:1/api/auth/provider/callback'
const json = (response: Response) => response.json() as Promise<any>
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

describe('the fake identity provider', () => {
  let provider: FakeProvider
  const defaults = () => ({ user: providerUser(), grantedScope: 'user:email', deny: false, tokenErrorStatus: 200 as const, emailsStatus: 200 as const, delayMs: 0, fail: null })

  beforeAll(async () => {
    provider = await startFakeProvider()
  })
  afterAll(() => provider.close())
  beforeEach(() => provider.configure(defaults()))

  async function authorize(query: Record<string, string> = {}): Promise<Response> {
    const params = new URLSearchParams({ client_id: 'cid', redirect_uri: CALLBACK, scope: 'user:email', state: 'st4te', ...query })
    return fetch(`${provider.url}/login/oauth/authorize?${params}`, { redirect: 'manual' })
  }

  async function code(query: Record<string, string> = {}): Promise<string> {
    const location = new URL((await authorize(query)).headers.get('location')!)
    return location.searchParams.get('code')!
  }

  function exchange(body: Record<string, string>, { json = true, accept = 'application/json', headers = {} as Record<string, string> } = {}): Promise<Response> {
    return fetch(`${provider.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { accept, 'content-type': json ? 'application/json' : 'application/x-www-form-urlencoded', ...headers },
      body: json ? JSON.stringify(body) : new URLSearchParams(body).toString(),
    })
  }

  async function token(): Promise<string> {
    const response = await exchange({ client_id: 'cid', client_secret: 'csecret', code: await code() })
    return (await json(response)).access_token
  }

  const api = (path: string, authorization?: string) => fetch(`${provider.url}${path}`, { headers: authorization === undefined ? {} : { authorization } })

  describe('authorize', () => {
    it('redirects to redirect_uri with a fresh code and the state, remembering what it was asked', async () => {
      const response = await authorize()
      expect(response.status).toBe(302)
      const location = new URL(response.headers.get('location')!)
      expect(`${location.origin}${location.pathname}`).toBe(CALLBACK)
      expect(location.searchParams.get('state')).toBe('st4te')
      expect(location.searchParams.get('code')).toMatch(/^[0-9a-f]{20}$/)
      expect(provider.codes.at(-1)).toMatchObject({ code: location.searchParams.get('code'), clientId: 'cid', redirectUri: CALLBACK, scope: 'user:email', userId: provider.options.user.id })
      expect(await code()).not.toBe(location.searchParams.get('code'))
    })

    it('redirects with error=access_denied and the state when the user refuses', async () => {
      provider.configure({ deny: true })
      const location = new URL((await authorize()).headers.get('location')!)
      expect(location.searchParams.get('error')).toBe('access_denied')
      expect(location.searchParams.get('state')).toBe('st4te')
      expect(location.searchParams.has('code')).toBe(false)
    })

    it('answers an error page, never a redirect, for an unknown client', async () => {
      const response = await authorize({ client_id: 'someone-else' })
      expect(response.status).toBe(404)
      expect(response.headers.get('location')).toBeNull()
    })
  })

  describe('access_token', () => {
    it('exchanges a code sent as JSON for a JSON token answer, once', async () => {
      const issued = await code()
      const response = await exchange({ client_id: 'cid', client_secret: 'csecret', code: issued, redirect_uri: CALLBACK })
      expect(response.status).toBe(200)
      const body = await json(response)
      expect(body).toEqual({ access_token: expect.stringMatching(/^gho_/), token_type: 'bearer', scope: 'user:email' })
      expect(provider.tokens.at(-1)).toMatchObject({ accessToken: body.access_token, code: issued, userId: provider.options.user.id })

      const again = await exchange({ client_id: 'cid', client_secret: 'csecret', code: issued })
      expect(again.status).toBe(200)
      expect(await json(again)).toMatchObject({ error: 'bad_verification_code', error_description: expect.any(String) })
    })

    it('accepts a form body and answers form-encoded unless JSON is asked for', async () => {
      const response = await exchange({ client_id: 'cid', client_secret: 'csecret', code: await code() }, { json: false, accept: '*/*' })
      expect(response.headers.get('content-type')).toMatch(/^application\/x-www-form-urlencoded/)
      const body = new URLSearchParams(await response.text())
      expect(body.get('access_token')).toMatch(/^gho_/)
      expect(body.get('token_type')).toBe('bearer')
      expect(body.get('scope')).toBe('user:email')
    })

    it('accepts HTTP Basic client authentication (RFC 6749 §2.3.1)', async () => {
      const response = await exchange({ code: await code() }, { json: false, headers: { authorization: basic('cid', 'csecret') } })
      expect((await json(response)).access_token).toMatch(/^gho_/)
      const wrong = await exchange({ code: await code() }, { json: false, headers: { authorization: basic('cid', 'nope') } })
      expect(await json(wrong)).toMatchObject({ error: 'incorrect_client_credentials' })
    })

    it('refuses a wrong secret, an unknown code and another redirect_uri, with 200 or the configured 401', async () => {
      const cases: Array<[Record<string, string>, string]> = [
        [{ client_id: 'cid', client_secret: 'wrong', code: await code() }, 'incorrect_client_credentials'],
        [{ client_id: 'cid', client_secret: 'csecret', code: 'bogus' }, 'bad_verification_code'],
        [{ client_id: 'cid', client_secret: 'csecret', code: await code(), redirect_uri: 'http://127.0.0.1:2/elsewhere' }, 'redirect_uri_mismatch'],
      ]
      for (const [body, error] of cases) {
        const response = await exchange(body)
        expect(response.status).toBe(200)
        expect(await json(response)).toMatchObject({ error, error_description: expect.any(String) })
      }
      provider.configure({ tokenErrorStatus: 401 })
      const refused = await exchange({ client_id: 'cid', client_secret: 'csecret', code: 'bogus' })
      expect(refused.status).toBe(401)
      expect(await json(refused)).toMatchObject({ error: 'bad_verification_code' })
    })

    it('reports the configured granted scope', async () => {
      provider.configure({ grantedScope: 'read:user' })
      const response = await exchange({ client_id: 'cid', client_secret: 'csecret', code: await code() })
      expect((await json(response)).scope).toBe('read:user')
    })
  })

  describe('the API', () => {
    it('answers /user and /user/emails for the user the token was issued to, with Bearer or token', async () => {
      const first = provider.options.user
      const accessToken = await token()
      provider.configure({ user: providerUser() })
      for (const scheme of ['Bearer', 'token']) {
        const user = await api('/user', `${scheme} ${accessToken}`)
        expect(user.status).toBe(200)
        expect(await json(user)).toMatchObject({ id: first.id, login: first.login, name: first.name, email: first.email })
        const emails = await api('/user/emails', `${scheme} ${accessToken}`)
        expect(await json(emails)).toEqual(first.emails)
      }
    })

    it('answers 401 for a missing or unknown token', async () => {
      expect((await api('/user')).status).toBe(401)
      expect((await api('/user', 'Bearer gho_unknown')).status).toBe(401)
      expect((await api('/user/emails', 'Bearer gho_unknown')).status).toBe(401)
    })

    it('answers /user/emails with 404 or 403 when configured so', async () => {
      const accessToken = await token()
      for (const status of [404, 403] as const) {
        provider.configure({ emailsStatus: status })
        expect((await api('/user/emails', `Bearer ${accessToken}`)).status).toBe(status)
      }
    })

    it('sees a user change at the provider (same id, new email) through an older token', async () => {
      const accessToken = await token()
      const changed = { ...provider.options.user, emails: [{ email: 'new@example.test', primary: true, verified: true, visibility: null }] }
      provider.configure({ user: changed })
      expect(await json(await api('/user/emails', `Bearer ${accessToken}`))).toEqual(changed.emails)
    })
  })

  describe('faults and records', () => {
    it('answers 500 at the configured endpoint', async () => {
      const accessToken = await token()
      provider.configure({ fail: 'token' })
      expect((await exchange({ client_id: 'cid', client_secret: 'csecret', code: await code() })).status).toBe(500)
      provider.configure({ fail: 'user' })
      expect((await api('/user', `Bearer ${accessToken}`)).status).toBe(500)
      expect((await api('/user/emails', `Bearer ${accessToken}`)).status).toBe(200)
      provider.configure({ fail: 'emails' })
      expect((await api('/user/emails', `Bearer ${accessToken}`)).status).toBe(500)
    })

    it('delays every answer by delayMs', async () => {
      provider.configure({ delayMs: 200 })
      const started = Date.now()
      await authorize()
      expect(Date.now() - started).toBeGreaterThanOrEqual(190)
    })

    it('records every request with its method, path, headers and body', async () => {
      const accessToken = await token()
      await api('/user', `Bearer ${accessToken}`)
      const exchangeCall = provider.calls.filter((call) => call.path === '/login/oauth/access_token').at(-1)!
      expect(exchangeCall).toMatchObject({ method: 'POST', body: { client_id: 'cid', client_secret: 'csecret' } })
      expect(provider.callsWithToken(accessToken)).toEqual([expect.objectContaining({ method: 'GET', path: '/user' })])
    })
  })
})

describe('the test browser', () => {
  let site: FastifyInstance
  let base: string
  beforeAll(async () => {
    site = Fastify({ logger: false })
    site.get('/set', async (_request, reply) => {
      reply.header('set-cookie', ['a=1; Path=/; HttpOnly', 'scoped=2; Path=/only; Max-Age=60'])
      return reply.redirect('/echo', 302)
    })
    site.get('/clear', async (_request, reply) => reply.header('set-cookie', 'a=; Path=/; Max-Age=0').send('cleared'))
    site.get('/echo', async (request) => request.headers.cookie ?? '')
    site.get('/only/echo', async (request) => request.headers.cookie ?? '')
    await site.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(site.server.address() as AddressInfo).port}`
  })
  afterAll(() => site.close())

  it('follows redirects carrying cookies by path, answers every hop, forgets cookies at Max-Age=0', async () => {
    const b = browser()
    const hops = await b.follow(`${base}/set`)
    expect(hops.map((hop) => hop.status)).toEqual([302, 200])
    expect(hops[0]!.location).toBe(`${base}/echo`)
    expect(hops[0]!.setCookie).toHaveLength(2)
    expect(hops[1]!.body).toBe('a=1')
    expect((await b.get(`${base}/only/echo`)).body).toBe('a=1; scoped=2')
    await b.get(`${base}/clear`)
    expect((await b.get(`${base}/echo`)).body).toBe('')
    expect(b.cookie(`${base}/only/x`, 'scoped')).toBe('2')
  })

  it('stops before a Location it is told to stop at, and after max requests', async () => {
    const b = browser()
    expect((await b.follow(`${base}/set`, { stopAt: (next) => next.pathname === '/echo' })).map((hop) => hop.status)).toEqual([302])
    expect(await b.follow(`${base}/set`, { max: 1 })).toHaveLength(1)
  })
})
