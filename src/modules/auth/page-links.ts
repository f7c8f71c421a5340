import type { PageLink } from '../../lib/html.js'
import type { MailService } from '../mail/service.js'

/**
 * The account pages the backend serves itself (for when no frontend is configured), and the links
 * other pages give to them.
 */
export const ACCOUNT_PAGES = {
  signIn: '/api/auth/sign-in',
  account: '/api/auth/account',
  signOut: '/api/auth/sign-out',
  forgotPassword: '/api/auth/forgot-password',
  resendVerification: '/api/auth/resend-verification',
  personalTokens: '/api/auth/account/tokens',
} as const

export const SIGN_IN_LINK: PageLink = { href: ACCOUNT_PAGES.signIn, label: 'Sign in' }
export const FORGOT_PASSWORD_LINK: PageLink = { href: ACCOUNT_PAGES.forgotPassword, label: 'Ask for a new reset mail' }
export const RESEND_VERIFICATION_LINK: PageLink = { href: ACCOUNT_PAGES.resendVerification, label: 'Send a new verification mail' }

/** What the account page links to, one line per page. */
export const ACCOUNT_LINKS: readonly PageLink[] = [
  { href: ACCOUNT_PAGES.personalTokens, label: 'Personal access tokens' },
  { href: '/api/auth/account/teams', label: 'Team invitations' },
  { href: '/api/auth/account/two-factor', label: 'Two-factor authentication' },
]

/**
 * The forgot-password page, for a sign-in form's "Forgot password?" link: only while mail goes
 * out, since that page can do nothing else.
 */
export async function forgotPasswordHref(mail: Pick<MailService, 'enabled'>): Promise<string | undefined> {
  return (await mail.enabled()) ? ACCOUNT_PAGES.forgotPassword : undefined
}
