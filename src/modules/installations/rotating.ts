import type { ResolvedLaunch, SecretPlacement } from './launch-shape.js'

/**
 * Rotating secrets: values renewed while an instance runs (an OAuth connection's access token,
 * sent as `header:Authorization`). They are placed like any secret header, but marked, so that
 * the desired-state document leaves their values out of spec_hash and a renewal restarts nothing.
 */

const headerName = (target: string): string | undefined => (target.startsWith('header:') ? target.slice('header:'.length).toLowerCase() : undefined)

/**
 * The launch with the rotating secrets in place. A rotating header replaces any header of the
 * same name (compared without regard to case, as HTTP does) that the catalogue entry or a value
 * gave, whether plain or secret: the remote server gets one Authorization, the connection's.
 */
export function withRotating(resolved: ResolvedLaunch, rotating: readonly SecretPlacement[]): ResolvedLaunch {
  if (rotating.length === 0) return resolved
  const replaced = new Set(rotating.map((secret) => headerName(secret.target)).filter((name): name is string => name !== undefined))
  const secrets = [...resolved.secrets.filter((secret) => !replaced.has(headerName(secret.target) ?? '')), ...rotating.map((secret) => ({ ...secret, rotating: true as const }))]
  const { launch } = resolved
  if (launch.kind === 'remote') {
    const headers = Object.fromEntries(Object.entries(launch.headers).filter(([name]) => !replaced.has(name.toLowerCase())))
    return { launch: { ...launch, headers }, secrets }
  }
  return { launch, secrets }
}

/** The Authorization header value of an OAuth access token (RFC 6750, section 2.1). */
export const bearerOf = (accessToken: string): SecretPlacement => ({ target: 'header:Authorization', value: `Bearer ${accessToken}`, rotating: true })

/**
 * What an instance's log lines are masked with: each secret value, and the credential alone of
 * an Authorization-style value (`Bearer <token>`), which a program may print without its scheme.
 */
export function maskedValuesOf(secrets: readonly SecretPlacement[]): string[] {
  const values = secrets.map((secret) => secret.value)
  for (const value of [...values]) {
    const credential = /^(?:Bearer|Basic)\s+(\S.*)$/i.exec(value)?.[1]
    if (credential !== undefined) values.push(credential)
  }
  return [...new Set(values)]
}
