/**
 * After provider sign-in the callback redirects to the `return_to` the sign-in started with. Only a
 * path on this service or a URL on `global.page_url`'s origin may be kept: browsers strip TAB, CR and
 * LF from URLs (WHATWG URL), so `/<TAB>/evil.example` becomes `//evil.example`, off-site; other
 * control characters made the callback build an invalid Location header (a 500 outside the envelope
 * that lost the sign-in). Hostile values land on the default page; a row stored before the check
 * existed is checked again at the redirect. One run in headless Chromium shows where a real browser
 * ends up.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { register } from '../helpers/accounts.js'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { chromiumRequired, useChromium } from '../helpers/chromium.js'
import { DIALECTS } from '../helpers/database.js'
import {
  describeFlow, PAGE_URL, providerSignIn, providerUser, startProviderLoginApp, whoAmI, type ProviderLoginApp, type SignIn,
} from '../helpers/fake-provider.js'

/** Each must be dropped: the browser lands on global.page_url. */
const HOSTILE: Array<[string, string]> = [
  ['a TAB between the slashes', '/\t/evil.example'],
  ['a TAB after the slash', '/\tevil.example'],
  ['CR LF', '/\r\n/evil.example'],
  ['LF', '/\n/evil.example/'],
  ['a C0 control (0x01)', '/\u0001/evil.example'],
  ['DEL', '/\u007f/evil.example'],
  ['a leading space', ' /dashboard'],
  ['a no-break space', '/dash\u00a0board'],
  ['two backslashes', '\\\\evil.example'],
  ['slash backslash', '/\\evil.example'],
  ['protocol-relative', '//evil.example'],
  ['dot segment to protocol-relative', '/.//evil.example'],
  ['another origin', 'https://evil.example/'],
  ['userinfo trick', `${PAGE_URL}@evil.example/`],
  ['page_url host as a subdomain', `${PAGE_URL}.evil.example/`],
  ['javascript:', 'javascript:alert(document.domain)'],
  ['data:', 'data:text/html,<script>alert(1)</script>'],
  ['a relative path without a slash', 'evil.example'],
]

describe.each(DIALECTS)('return_to after provider sign-in on %s', (dialect) => {
  let ctx: TestContext
  let harness: ProviderLoginApp & { ownProvider: boolean }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    harness = await startProviderLoginApp(ctx)
    expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
  })
  afterAll(async () => {
    await ctx.close()
    await harness.provider.close()
  })

  async function signIn(returnTo: string): Promise<SignIn> {
    harness.provider.configure({ user: providerUser() })
    const flow = await providerSignIn(browser(), harness, returnTo)
    expect(flow.login.status).toBe(302)
    return flow
  }

  async function expectSignedIn(flow: SignIn) {
    expect(flow.callback?.status, flow.callback?.body).toBe(302)
    expect(flow.session).toBeDefined()
    expect((await whoAmI(harness.base, flow.session!)).status).toBe(200)
  }

  it.each(HOSTILE)('%s: dropped, the browser lands on global.page_url, signed in', async (_name, returnTo) => {
    const flow = await signIn(returnTo)
    await expectSignedIn(flow)
    expect(flow.callback!.headers.get('location')).toBe(`${PAGE_URL}/`)
  })

  it('NUL is refused by the sign-in start itself, in the envelope (no database can store it)', async () => {
    const started = await browser().get(`${harness.base}/api/auth/provider/login?return_to=${encodeURIComponent('/\u0000/evil.example')}`)
    expect(started.status).toBe(400)
    expect(started.location).toBeUndefined()
    expect(JSON.parse(started.body)).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
  })

  it('%09 (an encoded TAB) stays a path on this service', async () => {
    const flow = await signIn('/%09/evil.example')
    await expectSignedIn(flow)
    const landing = new URL(flow.landing!)
    expect(landing.origin).toBe(harness.base)
    expect(landing.pathname).toBe('/%09/evil.example')
  })

  it('a path on this service is kept, with its query and fragment', async () => {
    const flow = await signIn('/teams/42?tab=members#top')
    await expectSignedIn(flow)
    expect(flow.landing).toBe(`${harness.base}/teams/42?tab=members#top`)
  })

  it('a URL on global.page_url\'s origin is kept', async () => {
    const flow = await signIn(`${PAGE_URL}/dashboard?x=1`)
    await expectSignedIn(flow)
    expect(flow.landing).toBe(`${PAGE_URL}/dashboard?x=1`)
  })

  it.each(['/\u0001/evil.example', '/\t/evil.example', '//evil.example', 'javascript:alert(1)'])(
    'a stored return_to from before the check (%j) is checked again at the redirect: page_url, never a 500',
    async (stored) => {
      harness.provider.configure({ user: providerUser() })
      const b = browser()
      const started = await b.get(`${harness.base}/api/auth/provider/login`)
      expect(started.status).toBe(302)
      const { db, t } = harness.app.services.database
      await db.update(t.providerStates).set({ returnTo: stored })
      const inFlow = (url: URL) => url.origin === harness.provider.url || (url.origin === harness.base && url.pathname.startsWith('/api/auth/provider/'))
      const rest = await b.follow(started.location!, { stopAt: (next) => !inFlow(next) })
      const flow = describeFlow([started, ...rest], harness.base, harness.provider)
      await expectSignedIn(flow)
      expect(flow.callback!.headers.get('location')).toBe(`${PAGE_URL}/`)
    },
  )
})

describe.skipIf(!chromiumRequired)('return_to with a TAB in headless Chromium', () => {
  const chromiumBrowser = useChromium('provider-return-to-open-redirect.test.ts')
  let evil: Server
  let evilOrigin: string
  const evilVisits: string[] = []

  beforeAll(async () => {
    // "evil.example": a second loopback origin that records whoever arrives.
    evil = createServer((request, response) => {
      evilVisits.push(request.url ?? '')
      response.writeHead(200, { 'content-type': 'text/html' }).end('<title>evil</title>phished')
    })
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
    evilOrigin = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise((resolve) => evil?.close(resolve))
  })

  describe.each(DIALECTS)('on %s', (dialect) => {
    let ctx: TestContext
    let harness: ProviderLoginApp & { ownProvider: boolean }

    beforeAll(async () => {
      ctx = await createTestContext(dialect)
      harness = await startProviderLoginApp(ctx)
      // The frontend is this service itself here, so the browser's landing page is reachable.
      await harness.app.services.settings.update([{ key: 'global.page_url', value: `${harness.base}/welcome` }])
      expect((await register(harness.app, { username: 'first_admin', email: 'first.admin@example.com' })).statusCode).toBe(201)
    })
    afterAll(async () => {
      await ctx?.close()
      await harness?.provider.close()
    })

    it('the browser ends on this service, not on the other origin, and is signed in', async () => {
      harness.provider.configure({ user: providerUser() })
      const hostile = `/\t/${new URL(evilOrigin).host}/`
      const context = await chromiumBrowser().newContext()
      const page = await context.newPage()
      try {
        await page.goto(`${harness.base}/api/auth/provider/login?return_to=${encodeURIComponent(hostile)}`)
        const landed = new URL(page.url())
        expect(landed.origin).toBe(harness.base)
        expect(landed.pathname).toBe('/welcome/')
        expect(evilVisits).toEqual([])
        const me = await page.request.get(`${harness.base}/api/users/me`)
        expect(me.status()).toBe(200)
      } finally {
        await context.close()
      }
    })
  })
})
