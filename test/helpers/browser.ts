/**
 * A tiny cookie-carrying HTTP client over Node's fetch, for flows that cross origins by redirect
 * (the provider login: app → provider → app). Cookies are kept per host, as browsers do (ports
 * share a host's cookies), honouring Path, Max-Age and Expires; redirects are never followed by
 * fetch itself, so every hop can be inspected.
 */

export interface Hop {
  url: string
  status: number
  /** The Location header resolved against `url`, when there was one. */
  location: string | undefined
  /** The raw Set-Cookie lines. */
  setCookie: string[]
  headers: Headers
  body: string
}

export interface FollowOptions {
  /** At most this many requests (default 10). */
  max?: number
  /** Stop (without requesting it) before a Location this answers true for. */
  stopAt?: (next: URL) => boolean
}

interface StoredCookie {
  name: string
  value: string
  path: string
  expires: number
  httpOnly: boolean
}

export interface Browser {
  get(url: string, headers?: Record<string, string>): Promise<Hop>
  /** A form-encoded POST, as a browser submits a form. */
  postForm(url: string, fields: Record<string, string>, headers?: Record<string, string>): Promise<Hop>
  /** Requests `url`, then each redirect's Location, carrying cookies; answers every hop. */
  follow(url: string, options?: FollowOptions): Promise<Hop[]>
  /** The `name=value` pairs this browser would send to `url`. */
  cookieHeader(url: string): string
  /** The value of a cookie for `url`'s host, if the jar holds one. */
  cookie(url: string, name: string): string | undefined
  /** Puts a cookie in the jar (e.g. to replay an old one). */
  setCookie(url: string, name: string, value: string, path?: string): void
  clear(): void
}

export function browser(): Browser {
  const jar = new Map<string, Map<string, StoredCookie>>()

  const cookiesFor = (url: URL): StoredCookie[] => {
    const now = Date.now()
    return [...(jar.get(url.hostname)?.values() ?? [])].filter((c) => c.expires > now && pathMatches(url.pathname, c.path))
  }

  const store = (url: URL, line: string): void => {
    const [pair = '', ...attributes] = line.split(';').map((part) => part.trim())
    const eq = pair.indexOf('=')
    if (eq <= 0) return
    const cookie: StoredCookie = { name: pair.slice(0, eq), value: pair.slice(eq + 1), path: defaultPath(url), expires: Number.POSITIVE_INFINITY, httpOnly: false }
    for (const attribute of attributes) {
      const [key = '', value = ''] = attribute.split('=', 2)
      switch (key.toLowerCase()) {
        case 'path': if (value.startsWith('/')) cookie.path = value; break
        case 'max-age': cookie.expires = Date.now() + Number(value) * 1000; break
        case 'expires': if (!attributes.some((a) => /^max-age=/i.test(a))) cookie.expires = Date.parse(value); break
        case 'httponly': cookie.httpOnly = true; break
      }
    }
    const host = jar.get(url.hostname) ?? new Map<string, StoredCookie>()
    jar.set(url.hostname, host)
    const key = `${cookie.name};${cookie.path}`
    if (cookie.expires <= Date.now()) host.delete(key)
    else host.set(key, cookie)
  }

  const cookieHeader = (url: string) => cookiesFor(new URL(url)).map((c) => `${c.name}=${c.value}`).join('; ')

  /** One request with the jar's cookies; stores what the response sets; never follows redirects. */
  const send = async (url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Hop> => {
    const target = new URL(url)
    const cookie = cookieHeader(url)
    const response = await fetch(target, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: { ...(cookie === '' ? {} : { cookie }), ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
    })
    const setCookie = response.headers.getSetCookie()
    for (const line of setCookie) store(target, line)
    const location = response.headers.get('location')
    return {
      url,
      status: response.status,
      location: location === null ? undefined : new URL(location, target).toString(),
      setCookie,
      headers: response.headers,
      body: await response.text(),
    }
  }
  const get = (url: string, headers: Record<string, string> = {}) => send(url, { headers })

  return {
    get,
    postForm: (url, fields, headers = {}) => send(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    }),
    cookieHeader,
    async follow(url, { max = 10, stopAt = () => false } = {}) {
      const hops: Hop[] = []
      let next: string | undefined = url
      while (next !== undefined && hops.length < max) {
        const hop = await get(next)
        hops.push(hop)
        next = hop.status >= 300 && hop.status < 400 && hop.location !== undefined && !stopAt(new URL(hop.location)) ? hop.location : undefined
      }
      return hops
    },
    cookie(url, name) {
      return cookiesFor(new URL(url)).find((c) => c.name === name)?.value
    },
    setCookie(url, name, value, path = '/') {
      store(new URL(url), `${name}=${value}; Path=${path}`)
    },
    clear: () => jar.clear(),
  }
}

/** RFC 6265 §5.1.4 */
function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true
  if (!requestPath.startsWith(cookiePath)) return false
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/'
}

/** RFC 6265 §5.1.4: the directory of the request path. */
function defaultPath(url: URL): string {
  const slash = url.pathname.lastIndexOf('/')
  return slash <= 0 ? '/' : url.pathname.slice(0, slash)
}
