/**
 * The callback's `state`: it must be the one this browser was given (the HttpOnly cookie) and one
 * the service still holds (digest in the database, ten minutes, single use). Another browser's
 * callback, a replay, a late one or one from before an issuer change is refused with 400
 * OIDC_STATE_MISMATCH and spends nothing it should not; of concurrent callbacks with one state,
 * exactly one signs in. An error the issuer sends back is shown as such: a page for a browser,
 * the envelope for others.
 */
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browser } from '../helpers/browser.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { fire, warmUp } from '../helpers/races.js'
import { rawRows } from '../helpers/sql.js'
import { oidcSettings, oidcSignIn, registerFirstAdmin, startOidcHarness, whoAmI, type OidcHarness } from './harness.js'

const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }

describe.each(DIALECTS)('the OpenID Connect callback state on %s', (dialect) => {
  let h: OidcHarness
  const clock = manualClock(Date.now())
  let seq = 0
  const person = () => {
    const subject = `sub-state-${(seq += 1)}`
    h.issuer.accounts.set(subject, { email: `${subject}@example.test`, email_verified: true })
    return subject
  }
  const pending = async () => Number((await rawRows(h.app.services.database, sql`select count(*) from oidc_states`))[0]![0])

  beforeAll(async () => {
    h = await startOidcHarness(dialect, { build: { clock } })
    await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('another browser\'s callback is refused and spends nothing: the browser that started the sign-in still completes it', async () => {
    const victim = browser()
    const started = await oidcSignIn(h.base, { account: person(), agent: victim, stopBeforeCallback: true })
    for (const attacker of [browser(), (() => {
      const other = browser()
      other.setCookie(h.base, 'oidc_state', 'a-state-of-its-own-0123456789-abcdefghijklmnopq', '/api/auth/oidc')
      return other
    })()]) {
      const refused = await attacker.get(started.callbackUrl!)
      expect(refused.status).toBe(400)
      expect(JSON.parse(refused.body)).toMatchObject({ success: false, code: 'OIDC_STATE_MISMATCH' })
      expect(refused.setCookie.some((line) => line.startsWith('auth_session=') && !/max-age=0/i.test(line))).toBe(false)
    }
    const completed = await victim.get(started.callbackUrl!)
    expect(completed.status, completed.body).toBe(302)
  })

  it('a replayed callback is refused even with the cookie put back: the state was spent on the server', async () => {
    const agent = browser()
    const flow = await oidcSignIn(h.base, { account: person(), agent })
    expect(flow.callback?.status).toBe(302)
    // The first callback cleared the cookie.
    expect(agent.cookie(h.base + '/api/auth/oidc/callback', 'oidc_state')).toBeUndefined()
    const state = new URL(flow.callbackUrl!).searchParams.get('state')!
    agent.setCookie(h.base, 'oidc_state', state, '/api/auth/oidc')
    const replay = await agent.get(flow.callbackUrl!)
    expect(replay.status).toBe(400)
    expect(JSON.parse(replay.body).code).toBe('OIDC_STATE_MISMATCH')
  })

  it('a callback without state or cookie is refused', async () => {
    for (const url of [`${h.base}/api/auth/oidc/callback`, `${h.base}/api/auth/oidc/callback?code=abc`, `${h.base}/api/auth/oidc/callback?code=abc&state=xyz`]) {
      const response = await fetch(url)
      expect(response.status).toBe(400)
      expect(((await response.json()) as { code: string }).code).toBe('OIDC_STATE_MISMATCH')
    }
  })

  it('a callback after ten minutes is refused, and the expired row is purged', async () => {
    const agent = browser()
    const started = await oidcSignIn(h.base, { account: person(), agent, stopBeforeCallback: true })
    expect(await pending()).toBeGreaterThanOrEqual(1)
    clock.advance(10 * 60_000 + 1)
    const late = await agent.get(started.callbackUrl!)
    expect(late.status).toBe(400)
    expect(JSON.parse(late.body).code).toBe('OIDC_STATE_MISMATCH')
    await h.app.services.purgeExpired()
    expect(await pending()).toBe(0)
  })

  it('a sign-in begun before the issuer setting changed cannot be completed with the new issuer', async () => {
    const agent = browser()
    const started = await oidcSignIn(h.base, { account: person(), agent, stopBeforeCallback: true })
    // The same issuer under another spelling is another setting value: what began under the old one is not completed.
    await h.app.services.settings.update([{ key: 'oidc.issuer', value: `${h.issuer.issuer}/` }])
    const refused = await agent.get(started.callbackUrl!)
    expect(refused.status).toBe(400)
    expect(JSON.parse(refused.body).code).toBe('OIDC_STATE_MISMATCH')
    expect(JSON.parse(refused.body).error).toMatch(/issuer setting changed/)
    await h.app.services.settings.update(oidcSettings(h.issuer))
  })

  it('of concurrent callbacks with one state and its cookie, exactly one signs in', async () => {
    const started = await oidcSignIn(h.base, { account: person(), stopBeforeCallback: true })
    const callback = new URL(started.callbackUrl!)
    const state = callback.searchParams.get('state')!
    await warmUp(h.app, 8)
    const answers = await fire(8, () => h.app.inject({ method: 'GET', url: `${callback.pathname}${callback.search}`, headers: { cookie: `oidc_state=${state}` } }))
    const outcomes = answers.map((answer) => (answer.statusCode === 302 ? '302' : `${answer.statusCode} ${answer.json().code}`)).sort()
    expect(outcomes).toEqual(['302', ...Array<string>(7).fill('400 OIDC_STATE_MISMATCH')])
  })

  it('an error from the issuer (the person declined) is shown: a page for a browser, the envelope for others; nobody is signed in', async () => {
    for (const headers of [HTML, {}]) {
      const agent = browser()
      const flow = await oidcSignIn(h.base, { account: person(), agent, deny: true, headers })
      expect(new URL(flow.callbackUrl!).searchParams.get('error')).toBe('access_denied')
      expect(flow.callback?.status).toBe(400)
      expect(flow.session).toBeUndefined()
      if (headers === HTML) {
        expect(flow.callback?.headers.get('content-type')).toMatch(/^text\/html/)
        expect(flow.callback?.body).toContain('<h1>Single sign-on failed</h1>')
        expect(flow.callback?.body).toContain('access_denied')
        expect(flow.callback?.body).toContain('/api/auth/sign-in')
      } else {
        expect(JSON.parse(flow.callback!.body)).toMatchObject({ success: false, code: 'OIDC_LOGIN_FAILED' })
        expect(JSON.parse(flow.callback!.body).error).toMatch(/the issuer refused the sign-in: access_denied/)
      }
    }
  })

  it('a session from the callback works right away', async () => {
    const flow = await oidcSignIn(h.base, { account: person() })
    expect((await whoAmI(h.base, flow.session!)).status).toBe(200)
  })
})
