/**
 * The headless Chromium the browser tests drive: Debian's `chromium` package, through
 * playwright-core, which never downloads a browser of its own.
 *
 * On a developer's machine without the package the browser tests are skipped with a message, so
 * the rest of the suite still runs. Under CI (any `CI` variable) they must run: .ci/run installs
 * the package, and a missing browser there means the pages went untested, so it is a failure, not
 * a quiet skip.
 */
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'

export const CHROMIUM = '/usr/bin/chromium'

const installed = existsSync(CHROMIUM)

/** Whether the browser tests run here: Chromium is installed, or this is CI (where its absence fails them). For `describe.skipIf(!chromiumRequired)`. */
export const chromiumRequired = installed || process.env.CI !== undefined

/**
 * Headless, and able to start as root (the CI container) where Chromium's sandbox cannot. No GPU,
 * no QUIC, no first-run page, and none of the browser's own background traffic (component
 * updates, sync and the rest of its background networking): the tests reach only loopback
 * servers, and a closed network must not make the browser wait or log errors of its own into the
 * console the tests watch.
 */
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
]

/**
 * Launches one Chromium for the calling `describe` (beforeAll) and closes it after (afterAll);
 * answers a getter for it. `fileLabel` names the test file in the message shown when the tests are
 * skipped. Playwright gives the browser a new, empty profile directory and removes it on close.
 */
export function useChromium(fileLabel: string): () => Browser {
  if (!chromiumRequired) console.warn(`${fileLabel}: the headless Chromium tests are skipped (no Debian chromium at ${CHROMIUM}; apt-get install chromium, as .ci/run does)`)
  let launched: Browser | undefined

  beforeAll(async () => {
    if (!installed) throw new Error(`Debian chromium is required at ${CHROMIUM} under CI (.ci/run installs it with apt-get)`)
    launched = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
  }, 60_000)
  afterAll(() => launched?.close())

  return () => {
    if (launched === undefined) throw new Error('Chromium is not launched: call the getter inside a test or hook of the describe that called useChromium')
    return launched
  }
}
