/**
 * A browser over app.inject for the backend's own pages, as the page tests use it.
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { setCookieLines } from './accounts.js'

/** What a browser sends when it follows a link or submits a form. */
export const HTML_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

/**
 * A browser over app.inject: it keeps the cookies the pages set (by name; an empty value or
 * Max-Age=0 removes one), sends `Accept: text/html…`, and posts forms with its own Origin.
 */
export function pageBrowser(app: FastifyInstance, origin = 'http://localhost:3000') {
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
