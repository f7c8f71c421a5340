import { createHash } from 'node:crypto'

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text and attribute values inserted into HTML (mail bodies, the pages the service serves). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]!)
}

/**
 * The pages the service serves itself (consent, sign-in, password reset, email verification,
 * refusals): plain HTML forms, no script at all, one stylesheet allowed by its hash, so the
 * Content-Security-Policy can forbid everything else.
 */
const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1c1e21;margin:0}
main{max-width:28rem;margin:3rem auto;background:#fff;border-radius:8px;padding:2rem;box-shadow:0 1px 3px #0002}
h1{font-size:1.3rem;margin:0 0 1rem}
label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input,select{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;border:1px solid #bbb;border-radius:4px}
ul{padding-left:1.2rem}
.actions{display:flex;gap:.8rem;margin-top:1.5rem}
button,.button{flex:1;padding:.6rem;font:inherit;border-radius:4px;border:1px solid #888;background:#fff;cursor:pointer;text-align:center;text-decoration:none;color:inherit}
button.primary{background:#1f6feb;border-color:#1f6feb;color:#fff}
.error{background:#fde8e8;color:#8a1c1c;padding:.6rem;border-radius:4px}
.success{background:#e6f4ea;color:#1e5631;padding:.6rem;border-radius:4px}
.muted{color:#666;font-size:.9rem}
input[type=checkbox]{width:auto;margin-right:.4rem}code{word-break:break-all}
`

const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`

/**
 * A strict policy: nothing loads but the page's own stylesheet; forms may go to this service and
 * to `formTargets` (the consent decision's redirect, which browsers check against form-action too).
 */
export function pagePolicy(formTargets: readonly string[] = []): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    "img-src 'self' data:",
    `form-action 'self'${formTargets.map((target) => ` ${target}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ')
}

/** A whole page around `body` (HTML the caller escaped). */
export function pageLayout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body><main>
${body}
</main></body>
</html>
`
}

/** A next step a page offers: a link to another page of this service. */
export interface PageLink {
  href: string
  label: string
}

/** Next steps as a row of buttons; '' for none. */
export function linkButtons(links: readonly PageLink[]): string {
  if (links.length === 0) return ''
  return `<div class="actions">${links.map(({ href, label }) => `<a class="button" href="${escapeHtml(href)}">${escapeHtml(label)}</a>`).join('')}</div>`
}

export interface MessagePage {
  title: string
  message: string
  /** `error` for a refusal, `success` for a done deed. */
  tone: 'error' | 'success'
  /** What the reader can do next, in a muted line. */
  hint?: string
  /** The pages the hint speaks of, as buttons under it. */
  links?: readonly PageLink[]
}

/** A page that says one thing: a refusal, or that something was done. */
export function messagePage({ title, message, tone, hint, links = [] }: MessagePage): string {
  const role = tone === 'error' ? ' role="alert"' : ''
  return pageLayout(title, `<h1>${escapeHtml(title)}</h1>
<p class="${tone}"${role}>${escapeHtml(message)}</p>${hint === undefined ? '' : `\n<p class="muted">${escapeHtml(hint)}</p>`}${links.length === 0 ? '' : `\n${linkButtons(links)}`}`)
}
