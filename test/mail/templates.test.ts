import { describe, expect, it } from 'vitest'
import { escapeHtml } from '../../src/lib/html.js'
import {
  PRODUCT_NAME,
  passwordChangedMail,
  passwordResetMail,
  testMail,
  verificationMail,
  welcomeMail,
  type MailContent,
} from '../../src/modules/mail/templates.js'

const HOSTILE = `<img src=x onerror="alert('x')">&`
const LINK = 'https://app.example.test/verify-email?token=abc&next="/home"'

const templates: Array<[string, MailContent, { link?: string; username?: boolean }]> = [
  ['verification', verificationMail({ username: HOSTILE, link: LINK }), { link: LINK, username: true }],
  ['password reset', passwordResetMail({ username: HOSTILE, link: LINK, expiresInMinutes: 60 }), { link: LINK, username: true }],
  ['password changed', passwordChangedMail({ username: HOSTILE }), { username: true }],
  ['test', testMail(), {}],
  ['welcome', welcomeMail({ username: HOSTILE, link: LINK }), { link: LINK, username: true }],
]

describe('mail templates', () => {
  it('escapeHtml escapes the five HTML-significant characters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;')
    expect(escapeHtml('plain text')).toBe('plain text')
  })

  it.each(templates)('%s: names the product in the subject and both parts', (_name, mail) => {
    expect(mail.subject).toContain(PRODUCT_NAME)
    expect(mail.text).toContain(PRODUCT_NAME)
    expect(mail.html).toContain(PRODUCT_NAME)
    expect(mail.html).toMatch(/^<!doctype html>/)
  })

  it.each(templates.filter(([, , expected]) => expected.link))('%s: carries the link in both parts', (_name, mail) => {
    expect(mail.text).toContain(LINK)
    expect(mail.html).toContain(`href="${escapeHtml(LINK)}"`)
    expect(mail.html).not.toContain(LINK)
  })

  it.each(templates.filter(([, , expected]) => expected.username))('%s: escapes the user name in HTML only', (_name, mail) => {
    expect(mail.html).toContain(escapeHtml(HOSTILE))
    expect(mail.html).not.toContain('<img')
    expect(mail.text).toContain(HOSTILE)
  })

  it('the reset mail states how long the link lasts', () => {
    const mail = passwordResetMail({ username: 'alice', link: LINK, expiresInMinutes: 45 })
    expect(mail.text).toContain('45 minutes')
    expect(mail.html).toContain('45 minutes')
  })
})
