import { escapeHtml, pageLayout } from '../../lib/html.js'

/**
 * The two-factor pages the backend serves itself (for when no frontend is configured), in the
 * layout and under the strict policy of the other account pages: plain forms, no script. The QR
 * code is an SVG image in a data: URI, which the policy's `img-src data:` admits.
 */

/** Where the two-factor pages and their forms live (under /api/auth, where the form and challenge cookies are sent). */
export const TWO_FACTOR_PAGES = {
  /** The second step of a sign-in. */
  signIn: '/api/auth/sign-in/two-factor',
  /** The account's two-factor settings, and its forms. */
  account: '/api/auth/account/two-factor',
  setup: '/api/auth/account/two-factor/setup',
  enable: '/api/auth/account/two-factor/enable',
  disable: '/api/auth/account/two-factor/disable',
} as const

/** An error, or a done deed, above a form. */
export interface PageNotice {
  tone: 'error' | 'success'
  text: string
}

function notice(shown: PageNotice | undefined): string {
  if (shown === undefined) return ''
  return `<p class="${shown.tone}"${shown.tone === 'error' ? ' role="alert"' : ''}>${escapeHtml(shown.text)}</p>\n`
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`
const backToAccount = '<p class="muted"><a href="/api/auth/account">Back to your account</a></p>'

/** The sign-in's second step: a code from the app, or a recovery code, in one field. */
export function secondStepPage({ csrfToken, requestId, notice: shown }: { csrfToken: string; requestId?: string; notice?: PageNotice }): string {
  return pageLayout('Two-factor authentication', `<h1>Two-factor authentication</h1>
<p class="muted">Enter the code your authenticator app shows for this account, or one of your recovery codes.</p>
${notice(shown)}<form method="post" action="${TWO_FACTOR_PAGES.signIn}">
${hidden('csrf_token', csrfToken)}
${requestId === undefined ? '' : `${hidden('request_id', requestId)}\n`}<label for="code">Code or recovery code</label>
<input id="code" name="code" autocomplete="one-time-code" inputmode="text" minlength="6" maxlength="40" required autofocus>
<div class="actions"><button class="primary" type="submit">Continue</button></div>
</form>
<p class="muted"><a href="/api/auth/sign-in">Back to sign in</a></p>`)
}

/** What the settings page shows. */
export interface TwoFactorStatusView {
  csrfToken: string
  enabled: boolean
  recoveryCodesLeft: number
  /** Whether the disable form asks for the password (accounts with one). */
  hasPassword: boolean
  /** The service requires two-factor of admins, and this admin has none yet. */
  required: boolean
  notice?: PageNotice
}

/** The account's two-factor settings: the way in when it is off, the way out when it is on. */
export function statusPage(view: TwoFactorStatusView): string {
  const body = view.enabled
    ? `<p>Two-factor authentication is <strong>on</strong>. Signing in with your password also asks for a code from your authenticator app.</p>
<p class="muted">Recovery codes left: ${view.recoveryCodesLeft}.</p>
<h2>Switch it off</h2>
<form method="post" action="${TWO_FACTOR_PAGES.disable}">
${hidden('csrf_token', view.csrfToken)}
${view.hasPassword ? `<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" maxlength="128" required>
` : ''}<label for="code">Code or recovery code</label>
<input id="code" name="code" autocomplete="one-time-code" minlength="6" maxlength="40" required>
<div class="actions"><button type="submit">Switch two-factor authentication off</button></div>
</form>`
    : `<p>Two-factor authentication is <strong>off</strong>. With it on, signing in with your password also asks for a six-digit code from an authenticator app on your phone.</p>
${view.required ? '<p class="error" role="alert">This service requires two-factor authentication for administrators: set it up to use your account again.</p>\n' : ''}<form method="post" action="${TWO_FACTOR_PAGES.setup}">
${hidden('csrf_token', view.csrfToken)}
<div class="actions"><button class="primary" type="submit">Set up two-factor authentication</button></div>
</form>`
  return pageLayout('Two-factor authentication', `<h1>Two-factor authentication</h1>
${notice(view.notice)}${body}
${backToAccount}`)
}

/** What the setup page shows: the pending secret, as a QR code and as text. */
export interface SetupView {
  csrfToken: string
  secret: string
  /** The QR code of the otpauth URI, as a data: URI of an SVG image. */
  qrDataUri: string
  notice?: PageNotice
}

/** Scan (or type) the secret, then confirm a code from it. */
export function setupPage({ csrfToken, secret, qrDataUri, notice: shown }: SetupView): string {
  const grouped = secret.match(/.{1,4}/g)?.join(' ') ?? secret
  return pageLayout('Set up two-factor authentication', `<h1>Set up two-factor authentication</h1>
${notice(shown)}<p>Scan this QR code with an authenticator app (such as Aegis, Google Authenticator or 1Password).</p>
<p><img src="${qrDataUri}" alt="QR code of the two-factor secret" width="200" height="200"></p>
<p class="muted">Cannot scan it? Type this key into the app instead (time-based, six digits):</p>
<p><code id="secret" data-secret="${escapeHtml(secret)}">${escapeHtml(grouped)}</code></p>
<form method="post" action="${TWO_FACTOR_PAGES.enable}">
${hidden('csrf_token', csrfToken)}
<label for="code">The code the app shows now</label>
<input id="code" name="code" autocomplete="one-time-code" inputmode="numeric" minlength="6" maxlength="12" required>
<div class="actions"><button class="primary" type="submit">Confirm and switch on</button></div>
</form>
${backToAccount}`)
}

/** The recovery codes, shown this once. */
export function recoveryCodesPage(codes: readonly string[]): string {
  return pageLayout('Two-factor authentication is on', `<h1>Two-factor authentication is on</h1>
<p class="success">From now on, signing in asks for a code from your authenticator app.</p>
<p>Keep these recovery codes somewhere safe (printed, or in a password manager). Each one signs you in once if you lose your phone. <strong>They are not shown again.</strong></p>
<ul id="recovery-codes">
${codes.map((code) => `<li><code>${escapeHtml(code)}</code></li>`).join('\n')}
</ul>
${backToAccount}`)
}
