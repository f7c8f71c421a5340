import { escapeHtml, messagePage, pageLayout } from '../../lib/html.js'

/**
 * The pages behind the links in mails when no frontend is configured (`global.page_url` empty),
 * in the layout and under the policy of the consent page.
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
    hint: 'Sign in with the new password. You can close this page.',
  })
}

export function emailVerifiedPage(email: string): string {
  return messagePage({
    title: 'Email address verified',
    message: `${email} is verified.`,
    tone: 'success',
    hint: 'You can sign in now. You can close this page.',
  })
}
