import { escapeHtml } from '../../lib/html.js'

/**
 * Every mail has a plain-text and an HTML part and names the product. The HTML part
 * escapes every value it did not write itself (user names, links); the text part is not HTML
 * and carries them as they are. Pure functions: the caller builds links and sends.
 */

export const PRODUCT_NAME = 'MCP Deployment Platform'

export interface MailContent {
  subject: string
  text: string
  html: string
}


/**
 * A mail as written here. Paragraphs hold `{name}` placeholders rather than interpolated values,
 * so that each part inserts the values its own way: escaped in HTML, as they are in text.
 */
interface Mail {
  subject: string
  heading: string
  paragraphs: string[]
  action?: { label: string; link: string }
  /** Paragraphs after the action. */
  closing?: string[]
}

type Values = Record<string, string>

const fill = (template: string, values: Values, escape: (value: string) => string) =>
  template.replace(/\{(\w+)\}/g, (_match, name: string) => escape(values[name] ?? ''))

const same = (value: string) => value

function render(mail: Mail, values: Values): MailContent {
  const text = [
    ...mail.paragraphs.map((paragraph) => fill(paragraph, values, same)),
    ...(mail.action ? [`${mail.action.label}: ${mail.action.link}`] : []),
    ...(mail.closing ?? []).map((paragraph) => fill(paragraph, values, same)),
    `— ${PRODUCT_NAME}`,
  ].join('\n\n')

  const paragraph = (template: string) => `<p style="margin:0 0 16px">${fill(template, values, escapeHtml)}</p>`
  const action = mail.action
    ? `<p style="margin:0 0 16px"><a href="${escapeHtml(mail.action.link)}" style="display:inline-block;padding:10px 18px;background:#1f6feb;color:#ffffff;text-decoration:none;border-radius:4px">${escapeHtml(mail.action.label)}</a></p>` +
      `<p style="margin:0 0 16px;font-size:13px;color:#555555">If the button does not work, open this link: <a href="${escapeHtml(mail.action.link)}">${escapeHtml(mail.action.link)}</a></p>`
    : ''
  const html = [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${escapeHtml(mail.subject)}</title></head>`,
    '<body style="margin:0;padding:24px;font-family:Arial,Helvetica,sans-serif;font-size:15px;line-height:1.5;color:#222222">',
    `<h1 style="margin:0 0 16px;font-size:20px">${escapeHtml(mail.heading)}</h1>`,
    ...mail.paragraphs.map(paragraph),
    action,
    ...(mail.closing ?? []).map(paragraph),
    `<p style="margin:24px 0 0;font-size:12px;color:#777777">${escapeHtml(PRODUCT_NAME)}</p>`,
    '</body></html>',
  ].join('\n')

  return { subject: mail.subject, text, html }
}

export function verificationMail({ username, link }: { username: string; link: string }): MailContent {
  return render(
    {
      subject: `Verify your email address for ${PRODUCT_NAME}`,
      heading: 'Verify your email address',
      paragraphs: ['Hello {username},', `Please confirm that this is your email address to finish setting up your ${PRODUCT_NAME} account.`],
      action: { label: 'Verify email address', link },
      closing: ['If you did not create an account, you can ignore this email.'],
    },
    { username },
  )
}

export function passwordResetMail({ username, link, expiresInMinutes }: { username: string; link: string; expiresInMinutes: number }): MailContent {
  return render(
    {
      subject: `Reset your ${PRODUCT_NAME} password`,
      heading: 'Reset your password',
      paragraphs: ['Hello {username},', `Someone asked to reset the password of your ${PRODUCT_NAME} account. The link below works once and expires in {minutes} minutes.`],
      action: { label: 'Choose a new password', link },
      closing: ['If you did not ask for this, ignore this email: your password stays unchanged.'],
    },
    { username, minutes: String(expiresInMinutes) },
  )
}

export function passwordChangedMail({ username }: { username: string }): MailContent {
  return render(
    {
      subject: `Your ${PRODUCT_NAME} password was changed`,
      heading: 'Your password was changed',
      paragraphs: [
        'Hello {username},',
        `The password of your ${PRODUCT_NAME} account was just changed.`,
        'If this was not you, reset your password right away and tell your administrator.',
      ],
    },
    { username },
  )
}

export function testMail(): MailContent {
  return render(
    {
      subject: `${PRODUCT_NAME} test email`,
      heading: 'Test email',
      paragraphs: [`This is a test email from ${PRODUCT_NAME}. Receiving it means the SMTP settings work.`],
    },
    {},
  )
}

export function welcomeMail({ username, link }: { username: string; link: string }): MailContent {
  return render(
    {
      subject: `Welcome to ${PRODUCT_NAME}`,
      heading: `Welcome to ${PRODUCT_NAME}`,
      paragraphs: ['Hello {username},', 'Your account is ready.'],
      action: { label: `Open ${PRODUCT_NAME}`, link },
    },
    { username },
  )
}

/** An invitation to join a team; the team's name and the inviter's username are user text, escaped in the HTML part. */
export function invitationMail({ inviter, team, role, link, expiresInDays }: { inviter: string; team: string; role: string; link: string; expiresInDays: number }): MailContent {
  return render(
    {
      subject: `You are invited to join a team on ${PRODUCT_NAME}`,
      heading: 'You are invited to join a team',
      paragraphs: [
        'Hello,',
        `{inviter} invited you to join the team "{team}" on ${PRODUCT_NAME} as {role}.`,
        'Open the link below to accept. It works once and expires in {days} days. If you have no account yet, register with this email address first.',
      ],
      action: { label: 'Accept the invitation', link },
      closing: ['If you did not expect this invitation, you can ignore this email.'],
    },
    { inviter, team, role, days: String(expiresInDays) },
  )
}
