import type { PageLink } from '../../lib/html.js'
import { ACCOUNT_PAGES } from '../auth/page-links.js'
import type { OidcLogin } from './service.js'

/**
 * A sign-in page's "Sign in with …" link, coming back to `back` (the account page, or the consent
 * page of an OAuth authorization), while OpenID Connect sign-in is offered.
 */
export async function oidcSignInLink(login: Pick<OidcLogin, 'status' | 'safeReturnTo'>, back: string = ACCOUNT_PAGES.account): Promise<PageLink | undefined> {
  const { enabled, display_name: name } = await login.status()
  if (!enabled) return undefined
  const returnTo = await login.safeReturnTo(back)
  return { href: `/api/auth/oidc/login${returnTo === null ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`, label: `Sign in with ${name}` }
}
