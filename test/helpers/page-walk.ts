/**
 * What every browser test of the backend's own pages does: a fresh context whose pages report
 * each Content-Security-Policy violation, and the steps of a walk through the pages (follow a
 * link or a button to the page it leads to, read the heading, sign in on the sign-in form).
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'

/**
 * A new context and page of `browser`. Every CSP report of a page — from the console, and from a
 * `securitypolicyviolation` event the browser might not log — is pushed to `violations`; with
 * `origin`, only those of that origin's pages (another site's pages are not ours to judge).
 */
export async function openPage(browser: Browser, violations: string[], origin?: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext()
  await context.addInitScript({
    content: "document.addEventListener('securitypolicyviolation', (event) => console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`))",
  })
  const page = await context.newPage()
  page.on('console', (message) => {
    if (origin !== undefined && new URL(page.url()).origin !== origin) return
    if (/Content Security Policy|CSP violation/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`)
  })
  return { context, page }
}

/** The steps of a walk on the page `current` answers (read when each step runs, so it may be opened later). */
export function pageSteps(current: () => Page) {
  /** Clicks and waits for the page it leads to; answers that page's status. */
  async function follow(click: () => Promise<void>): Promise<number | undefined> {
    const [response] = await Promise.all([current().waitForNavigation(), click()])
    return response?.status()
  }
  const clickLink = (name: string) => follow(() => current().getByRole('link', { name, exact: true }).click())
  const clickButton = (name: string) => follow(() => current().getByRole('button', { name, exact: true }).click())
  return {
    follow,
    clickLink,
    clickButton,
    heading: () => current().locator('h1').innerText(),
    /** Fills the sign-in form and sends it; answers the status of the page it leads to. */
    async signIn(login: string, password: string): Promise<number | undefined> {
      await current().getByLabel('Email or username').fill(login)
      await current().getByLabel('Password', { exact: true }).fill(password)
      return clickButton('Sign in')
    },
  }
}
