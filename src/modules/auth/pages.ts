import { escapeHtml, linkButtons, messagePage, pageLayout, type PageLink } from '../../lib/html.js'
import { ACCOUNT_LINKS, ACCOUNT_PAGES, SIGN_IN_LINK } from './page-links.js'

/**
 * The pages behind the links in mails, and the account pages they lead to (sign-in, account,
 * forgot password), for when no frontend is configured (`global.page_url` empty), in the layout
 * and under the policy of the consent page.
 */

export interface ResetPasswordForm {
  token: string
  csrfToken: string
  username: string
  /** Why the previous attempt was refused, shown above the form. */
  error?: string
}

/** The username rides along, hidden, so that a password manager files the new password under it. */
export function resetPasswordPage({ token, csrfToken, username, error }: ResetPasswordForm): string {
  return pageLayout('Choose a new password', `<h1>Choose a new password</h1>
<p class="muted">For the account <strong>${escapeHtml(username)}</strong>. Every session of this account will be signed out.</p>
${error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(error)}</p>\n`}<form method="post" action="/api/auth/email/reset-password">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">
<input type="text" name="username" value="${escapeHtml(username)}" autocomplete="username" hidden disabled>
<label for="new_password">New password</label>
<input id="new_password" name="new_password" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>
<label for="new_password_confirm">The same password again</label>
<input id="new_password_confirm" name="new_password_confirm" type="password" autocomplete="new-password" minlength="8" maxlength="128" required>
<div class="actions"><button class="primary" type="submit">Set the new password</button></div>
</form>`)
}

export function passwordChangedPage(): string {
  return messagePage({
    title: 'Password changed',
    message: 'Your new password is set, and every session of your account was signed out.',
    tone: 'success',
    hint: 'Sign in with the new password, or close this page.',
    links: [SIGN_IN_LINK],
  })
}

export function emailVerifiedPage(email: string): string {
  return messagePage({
    title: 'Email address verified',
    message: `${email} is verified.`,
    tone: 'success',
    hint: 'You can sign in now, or close this page.',
    links: [SIGN_IN_LINK],
  })
}

/** An error, or a done deed (signed out), above a form. */
export interface Notice {
  tone: 'error' | 'success'
  text: string
  /** A page that helps with it (a new verification mail for an unverified address). */
  link?: PageLink
}

function notice(shown: Notice | undefined): string {
  if (shown === undefined) return ''
  const role = shown.tone === 'error' ? ' role="alert"' : ''
  const link = shown.link === undefined ? '' : ` <a href="${escapeHtml(shown.link.href)}">${escapeHtml(shown.link.label)}</a>`
  return `<p class="${shown.tone}"${role}>${escapeHtml(shown.text)}${link}</p>\n`
}

const csrfField = (csrfToken: string) => `<input type="hidden" name="csrf_token" value="${escapeHtml(csrfToken)}">`

export interface SignInForm {
  csrfToken: string
  notice?: Notice
  /** What was typed, kept after a refusal. */
  login?: string
  /** Provider sign-in that comes back to the account page, when provider login is on. */
  providerHref?: string
  /** "Sign in with <display name>" through OpenID Connect, when it is on. */
  oidcLink?: PageLink
  /** The forgot-password page, while mail goes out. */
  forgotHref?: string
}

/** The stand-alone sign-in page (not on behalf of an OAuth client: that one is src/oauth2/pages.ts). */
export function signInPage({ csrfToken, notice: shown, login = '', providerHref, oidcLink, forgotHref }: SignInForm): string {
  return pageLayout('Sign in', `<h1>Sign in</h1>
${notice(shown)}<form method="post" action="${ACCOUNT_PAGES.signIn}">
${csrfField(csrfToken)}
<label for="login">Email or username</label>
<input id="login" name="login" autocomplete="username" maxlength="255" required value="${escapeHtml(login)}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" maxlength="128" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
${providerHref === undefined ? '' : `${linkButtons([{ href: providerHref, label: 'Sign in with GitHub' }])}\n`}${oidcLink === undefined ? '' : `${linkButtons([oidcLink])}\n`}${forgotHref === undefined ? '' : `<p class="muted"><a href="${escapeHtml(forgotHref)}">Forgot password?</a></p>`}`)
}

export interface AccountView {
  username: string
  email: string
  csrfToken: string
  /** Login is switched off and this user is no admin: the session is refused everywhere else. */
  loginDisabled?: boolean
  notice?: Notice
}

/** Who is signed in, and the way out. */
export function accountPage({ username, email, csrfToken, loginDisabled = false, notice: shown }: AccountView): string {
  return pageLayout('Your account', `<h1>Your account</h1>
${notice(shown)}<p>Signed in as <strong>${escapeHtml(username)}</strong> (${escapeHtml(email)}).</p>
${loginDisabled ? '<p class="error" role="alert">Sign-in is switched off on this service: until an administrator switches it back on, this session opens nothing else.</p>\n' : ''}${linkButtons(ACCOUNT_LINKS)}
<form method="post" action="${ACCOUNT_PAGES.signOut}">
${csrfField(csrfToken)}
<div class="actions"><button type="submit">Sign out</button></div>
</form>`)
}

/** A page that asks for the account's email address to send it a mail. */
export interface MailRequestForm {
  kind: 'forgot-password' | 'resend-verification'
  csrfToken: string
  email?: string
  notice?: Notice
}

const MAIL_REQUESTS = {
  'forgot-password': {
    title: 'Forgot your password?',
    intro: 'Enter the email address of your account: a link to choose a new password goes there. It works for one hour.',
    action: ACCOUNT_PAGES.forgotPassword,
    button: 'Send the reset link',
  },
  'resend-verification': {
    title: 'Verify your email address',
    intro: 'Enter the email address you registered with: a new verification link goes there. It works for 24 hours.',
    action: ACCOUNT_PAGES.resendVerification,
    button: 'Send the verification link',
  },
} as const

export function mailRequestPage({ kind, csrfToken, email = '', notice: shown }: MailRequestForm): string {
  const { title, intro, action, button } = MAIL_REQUESTS[kind]
  return pageLayout(title, `<h1>${escapeHtml(title)}</h1>
<p class="muted">${escapeHtml(intro)}</p>
${notice(shown)}<form method="post" action="${action}">
${csrfField(csrfToken)}
<label for="email">Email address</label>
<input id="email" name="email" type="email" autocomplete="email" maxlength="255" required value="${escapeHtml(email)}">
<div class="actions"><button class="primary" type="submit">${escapeHtml(button)}</button></div>
</form>
<p class="muted"><a href="${ACCOUNT_PAGES.signIn}">Back to sign in</a></p>`)
}

/** The one answer to a mail request, whether or not the address has an account (no enumeration). */
export function mailRequestSentPage(kind: MailRequestForm['kind']): string {
  return messagePage({
    title: 'Check your mail',
    message: kind === 'forgot-password'
      ? 'If an account with this address exists, a mail with a link to choose a new password is on its way.'
      : 'If an account with this address still needs verifying, a mail with a new verification link is on its way.',
    tone: 'success',
    hint: 'Nothing arrived after a few minutes? Look in the spam folder, or check the address and ask again.',
    links: [SIGN_IN_LINK],
  })
}
