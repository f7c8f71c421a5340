import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { expect } from 'vitest'
import { setCookieLines } from '../helpers/accounts.js'
import { htmlTags, isHtml, unescapeHtml } from '../helpers/oauth.js'

export const PUBLIC_URL = 'http://localhost:3000'
/** What a browser sends when it follows a link or submits a form. */
const HTML_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

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

/**
 * A browser over app.inject: it keeps the cookies the pages set (by name; an empty value or
 * Max-Age=0 removes one), sends `Accept: text/html…`, and posts forms with its own Origin.
 */
export function pageBrowser(app: FastifyInstance, origin = PUBLIC_URL) {
  const jar = new Map<string, string>()
  const cookieHeader = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const keep = (response: LightMyRequestResponse) => {
    for (const line of setCookieLines(response)) {
      const [pair = ''] = line.split(';')
      const name = pair.slice(0, pair.indexOf('='))
      const value = pair.slice(pair.indexOf('=') + 1)
      if (value === '' || /max-age=0(;|$)/i.test(line)) jar.delete(name)
      else jar.set(name, value)
    }
    return response
  }
  const send = async (options: InjectOptions) => keep(await app.inject({ ...options, headers: { accept: HTML_ACCEPT, ...(jar.size > 0 ? { cookie: cookieHeader() } : {}), ...options.headers } }))
  return {
    jar,
    /** Signs in as the session cookie `auth_session=<value>`. */
    useSession(cookie: string) {
      jar.set('auth_session', cookie.slice('auth_session='.length))
    },
    get: (url: string, headers: Record<string, string> = {}) => send({ method: 'GET', url, headers }),
    post: (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) => send({
      method: 'POST', url, payload: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin, ...headers },
    }),
  }
}
