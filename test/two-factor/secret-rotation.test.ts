import { describe, expect, it, onTestFinished } from 'vitest'
import { rotateEncryptionSecret } from '../../src/modules/installations/secret-rotation.js'
import { RotationRefused } from '../../src/modules/settings/secret-rotation.js'
import { createTestContext, TEST_SECRET } from '../helpers/app.js'
import { manualClock } from '../helpers/clock.js'
import { DIALECTS } from '../helpers/database.js'
import { signUp } from '../helpers/teams.js'
import { codeAt, enrol, passwordStep, STEP_MS, verify } from './helpers.js'

const NEW_SECRET = 'the-new-secret-after-rotation-0123456789abcdefgh'
const WRONG_SECRET = 'not-the-old-secret-at-all-0123456789abcdefghijkl'

/**
 * A new ENCRYPTION_SECRET (`npm run secret:rotate`) re-encrypts the TOTP secrets with the rest:
 * an app on the new secret signs the user in with their authenticator as before. A rotation from
 * a wrong old secret names the secret it cannot open and writes nothing.
 */
describe.each(DIALECTS)('two-factor secrets and a new ENCRYPTION_SECRET on %s', (dialect) => {
  it('moves the TOTP secrets to the new secret; the authenticator keeps working', async () => {
    const ctx = await createTestContext(dialect, { file: true })
    onTestFinished(() => ctx.close())
    const clock = manualClock()
    const { app: before } = await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false' } })
    const account = await signUp(before, `rot_${dialect.slice(0, 2)}`)
    const { secret } = await enrol(before, account, clock.now())

    await expect(rotateEncryptionSecret(before.services.database, { from: WRONG_SECRET, to: NEW_SECRET })).rejects.toSatisfy((error) =>
      error instanceof RotationRefused && error.elsewhere.includes(`two-factor secret of user ${account.id}`))
    const report = await rotateEncryptionSecret(before.services.database, { from: TEST_SECRET, to: NEW_SECRET })
    expect(report.twoFactor).toEqual({ reencrypted: 1, current: 0 })
    expect((await rotateEncryptionSecret(before.services.database, { from: TEST_SECRET, to: NEW_SECRET })).twoFactor).toEqual({ reencrypted: 0, current: 1 })

    const { app: after } = await ctx.build({ clock, env: { RATE_LIMIT_ENABLED: 'false', ENCRYPTION_SECRET: NEW_SECRET } })
    clock.advance(STEP_MS)
    const verified = await verify(after, await passwordStep(after, account.email), { code: codeAt(secret, clock.now()) })
    expect(verified.statusCode, verified.body).toBe(200)
  })
})
