/**
 * The pending sign-in lives in the database: a sign-in started on one instance is completed by a
 * callback that lands on another instance of the same database (as behind a load balancer), and
 * the session it makes works on both. The state is spent for every instance.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { oidcSignIn, registerFirstAdmin, startOidcHarness, whoAmI, type OidcHarness } from './harness.js'

describe.each(DIALECTS)('OpenID Connect sign-in across two instances on one %s database', (dialect) => {
  let h: OidcHarness

  beforeAll(async () => {
    h = await startOidcHarness(dialect, { second: true })
    await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('started on the first instance, completed on the second; the session works on both; a replay on the first is refused', async () => {
    h.issuer.accounts.set('sub-lb-0001', { email: 'balanced@example.test', email_verified: true, preferred_username: 'balanced' })
    const agent = browser()
    const flow = await oidcSignIn(h.base, { account: 'sub-lb-0001', agent, callbackBase: h.second!.base, returnTo: '/api/auth/account' })
    expect(flow.callback?.url.startsWith(h.second!.base)).toBe(true)
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect(flow.callback?.location).toBe(`${h.second!.base}/api/auth/account`)
    for (const base of [h.base, h.second!.base]) {
      const me = await whoAmI(base, flow.session!)
      expect(me.status).toBe(200)
      expect(me.user).toMatchObject({ username: 'balanced', auth_methods: ['oidc'] })
    }
    const state = new URL(flow.callbackUrl!).searchParams.get('state')!
    agent.setCookie(h.base, 'oidc_state', state, '/api/auth/oidc')
    const replay = await agent.get(flow.callbackUrl!)
    expect(replay.status).toBe(400)
    expect(JSON.parse(replay.body).code).toBe('OIDC_STATE_MISMATCH')
  })
})
