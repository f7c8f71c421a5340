/**
 * The remote server as an OAuth resource: its canonical URI (RFC 8707, as the MCP authorization
 * spec spells it) and the Bearer challenge it answers an unauthenticated request with (RFC 6750
 * §3, with RFC 9728's `resource_metadata`).
 */

/** Scheme and host lower case (the URL parser does both), no fragment; path and query kept. */
export function canonicalResource(url: string | URL): string {
  const parsed = new URL(url)
  parsed.hash = ''
  const text = parsed.href
  // A bare origin is written without the parser's trailing slash, as the MCP spec's examples do.
  return parsed.pathname === '/' && parsed.search === '' && !String(url).endsWith('/') ? text.replace(/\/$/, '') : text
}

/** The key of a remote's oauth input. */
export const oauthKey = (resource: string): string => `oauth:${resource}`

export interface BearerChallenge {
  resourceMetadata: string | null
  scopes: string[]
}

/**
 * The Bearer challenge of a WWW-Authenticate header, or null when there is none. Only the
 * `resource_metadata` and `scope` parameters are read; quoted strings may hold commas.
 */
export function bearerChallenge(header: string | null | undefined): BearerChallenge | null {
  if (header === null || header === undefined) return null
  const start = /(?:^|,)\s*Bearer(?:\s+|$)/i.exec(header)
  if (start === null) return null
  const rest = header.slice(start.index + start[0].length)
  const parameters = new Map<string, string>()
  const pattern = /\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*(?:,|$)/y
  let match: RegExpExecArray | null
  while ((match = pattern.exec(rest)) !== null) {
    const name = match[1]!.toLowerCase()
    const value = match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3]!
    if (!parameters.has(name)) parameters.set(name, value)
    // Another scheme's challenge starts after a comma with a token and no `=`: stop there.
    if (/^\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+\s+[A-Za-z0-9]/.test(rest.slice(pattern.lastIndex))) break
  }
  const scope = parameters.get('scope')
  return {
    resourceMetadata: parameters.get('resource_metadata') ?? null,
    scopes: scope === undefined ? [] : scope.split(' ').filter((s) => s !== ''),
  }
}
