import type { PageLink } from '../../lib/html.js'
import { ACCOUNT_PAGES } from '../auth/page-links.js'
import type { OidcLogin } from './service.js'

/** The sign-in page's "Sign in with …" link (returning to the account page), while OpenID Connect sign-in is offered. */
export async function oidcSignInLink(login: Pick<OidcLogin, 'status' | 'safeReturnTo'>): Promise<PageLink | undefined> {
  const { enabled, display_name: name } = await login.status()
  if (!enabled) return undefined
  const returnTo = await login.safeReturnTo(ACCOUNT_PAGES.account)
  return { href: `/api/auth/oidc/login${returnTo === null ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`, label: `Sign in with ${name}` }
}
