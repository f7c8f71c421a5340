/**
 * The issuer's tokens are used once and never kept: no authorization code, access token, ID
 * token, client secret, state, nonce or PKCE verifier of a sign-in appears in any log line (at
 * trace level), in the audit log, or in the database (the state only as its digest, the verifier
 * only sealed). Refusals name what failed, not the values.
 */
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deriveKey } from '../../src/lib/keys.js'
import { createSecretBox } from '../../src/lib/secret-box.js'
import { TEST_SECRET } from '../helpers/app.js'
import { browser } from '../helpers/browser.js'
import { DIALECTS } from '../helpers/database.js'
import { captureLogs } from '../helpers/log-capture.js'
import { rawRows } from '../helpers/sql.js'
import { CLIENT_SECRET } from './issuer.js'
import { oidcSignIn, registerFirstAdmin, startOidcHarness, type OidcHarness } from './harness.js'

describe.each(DIALECTS)('OpenID Connect secrets on %s', (dialect) => {
  let h: OidcHarness
  const logs = captureLogs('trace')

  beforeAll(async () => {
    h = await startOidcHarness(dialect, { build: { logger: logs.logger } })
    await registerFirstAdmin(h.app)
  })
  afterAll(() => h.close())

  it('no code, token, secret, state, nonce or verifier in the logs, the audit log or the database', async () => {
    const seen = new Map<string, string>([['client secret', CLIENT_SECRET]])
    h.issuer.accounts.set('sub-quiet-0001', { email: 'quiet@example.test', email_verified: true })
    const box = createSecretBox(deriveKey(TEST_SECRET, 'oidc-state'))
    // Two sign-ins that succeed, one the issuer refuses (a bad code) and one with a forged nonce.
    for (const tamper of [undefined, undefined, 'code', 'nonce'] as const) {
      const agent = browser()
      const started = await oidcSignIn(h.base, {
        account: 'sub-quiet-0001', agent, stopBeforeCallback: true,
        tamper: tamper === 'nonce' ? (url) => url.searchParams.set('nonce', 'forged-nonce-0123456789-abcdef') : undefined,
      })
      const authorization = new URL(started.start.location!)
      const callback = new URL(started.callbackUrl!)
      seen.set('state', authorization.searchParams.get('state')!)
      seen.set(`nonce ${seen.size}`, authorization.searchParams.get('nonce')!)
      seen.set(`code ${seen.size}`, callback.searchParams.get('code')!)
      if (tamper === 'code') callback.searchParams.set('code', `${callback.searchParams.get('code')!}x`)
      const stored = await rawRows(h.app.services.database, sql`select digest, nonce, code_verifier from oidc_states`)
      expect(stored.some(([digest]) => digest === seen.get('state'))).toBe(false)
      // Every earlier sign-in spent its row: this one is the only one pending.
      expect(stored).toHaveLength(1)
      const [digest, , sealed] = stored[0]!
      expect(String(sealed)).toMatch(/^v1\./)
      seen.set(`verifier ${seen.size}`, box.open(String(sealed), String(digest)))
      const answer = await agent.get(callback.toString())
      expect(answer.status).toBe(tamper === undefined ? 302 : 400)
      for (const secret of seen.values()) expect(answer.body).not.toContain(secret)
    }
    for (const issued of h.issuer.issued) {
      for (const name of ['access_token', 'id_token', 'refresh_token']) if (typeof issued[name] === 'string') seen.set(`${name} ${seen.size}`, issued[name])
    }
    expect([...seen.keys()].filter((label) => label.startsWith('id_token'))).toHaveLength(3)

    const logText = logs.text()
    expect(logText).toContain('OpenID Connect sign-in')
    const audit = JSON.stringify(await rawRows(h.app.services.database, sql`select type, details from audit_events`))
    const dump = JSON.stringify(await rawRows(h.app.services.database, sql`select * from users`)) + JSON.stringify(await rawRows(h.app.services.database, sql`select * from oidc_states`))
    for (const [label, secret] of seen) {
      expect(logText.includes(secret), `${label} in the logs`).toBe(false)
      expect(audit.includes(secret), `${label} in the audit log`).toBe(false)
      expect(dump.includes(secret), `${label} in the database`).toBe(false)
    }
  })
})
