import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CORE_SETTINGS, type CoreSettingKey } from '../../src/modules/settings/definitions.js'
import { createTestContext, type TestApp, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

/**
 * The README's curl quickstart, run as written by bash and curl against a listening service: every
 * command must succeed, and a newcomer who follows it must not be left with a setting that changes
 * what users see (the links in mails, sign-in, registration…).
 */
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

function quickstartScript(): string {
  const section = README.slice(README.indexOf('## Quickstart with curl'))
  const block = /```sh\n([\s\S]*?)```/.exec(section)
  if (block === null) throw new Error('the README has no sh block under "Quickstart with curl"')
  return block[1]!
}

/** The settings the quickstart may change: only one that alters nothing a user meets. */
const CHANGED_ON_PURPOSE: ReadonlySet<CoreSettingKey> = new Set(['team.member_limit'])

describe.each(DIALECTS)('the README quickstart on %s', (dialect) => {
  let ctx: TestContext
  let subject: TestApp
  let base: string
  let workDir: string | undefined

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    subject = await ctx.build()
    base = await subject.app.listen({ port: 0, host: '127.0.0.1' })
    workDir = mkdtempSync(join(tmpdir(), 'svc-quickstart-'))
  })
  afterAll(async () => {
    if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true })
    await ctx.close()
  })

  it('runs as written: every answer is a success, and no setting a user would notice has changed', async () => {
    const script = quickstartScript()
    expect(script).toMatch(/^B=http:\/\/localhost:3000$/m)
    // One answer a line; the service's address instead of the default one.
    const run = `set -eu\ncurl() { command curl --fail-with-body "$@"; echo; }\n${script.replace(/^B=.*$/m, `B=${base}`)}`
    // Asynchronously: the service answers from this very process.
    const { stdout: output } = await promisify(execFile)('bash', ['-c', run], { cwd: workDir, encoding: 'utf8', timeout: 30_000 })
    const answers = output.trim().split('\n').map((line) => JSON.parse(line) as { success: boolean })
    expect(answers.length).toBe((script.match(/^curl /gm) ?? []).length)
    for (const answer of answers) expect(answer).toMatchObject({ success: true })

    const settings = subject.app.services.settings
    for (const key of Object.keys(CORE_SETTINGS) as CoreSettingKey[]) {
      if (CHANGED_ON_PURPOSE.has(key)) continue
      const fallback = CORE_SETTINGS[key].default
      expect.soft(await settings.get(key), key).toEqual(typeof fallback === 'function' ? fallback(subject.config) : fallback)
    }
  })
})
