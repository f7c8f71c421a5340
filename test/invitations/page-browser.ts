import type { LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import { htmlTags, isHtml, unescapeHtml } from '../helpers/oauth.js'

export { pageBrowser } from '../helpers/page-browser.js'

export const PUBLIC_URL = 'http://localhost:3000'

/** The page's text, tags removed, entities decoded. */
export const textOf = (response: LightMyRequestResponse) => unescapeHtml(response.body.replace(/<[^>]+>/g, ' ')).replace(/\s+/g, ' ')

/** A page under the strict policy: HTML, no script, not cached. */
export function expectPage(response: LightMyRequestResponse, status: number) {
  expect(response.statusCode, response.body).toBe(status)
  expect(isHtml(response)).toBe(true)
  const csp = String(response.headers['content-security-policy'])
  expect(csp).toContain("default-src 'none'")
  expect(csp).not.toContain('script-src')
  expect(response.body).not.toContain('<script')
  expect(response.headers['cache-control']).toBe('no-store')
}

/** The forms of a page: where each posts and its hidden fields. */
export function formsOf(response: LightMyRequestResponse): Array<{ action: string; hidden: Record<string, string> }> {
  const forms = response.body.split('<form').slice(1)
  return forms.map((form) => {
    const html = `<form${form.slice(0, form.indexOf('</form>'))}`
    const [tag] = htmlTags(html, 'form')
    const hidden = htmlTags(html, 'input').filter((input) => input.type === 'hidden').map((input) => [input.name!, input.value ?? ''])
    return { action: tag!.action!, hidden: Object.fromEntries(hidden) }
  })
}

