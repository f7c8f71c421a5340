import type { NodemailerError, SMTPSentMessageInfo, Transporter } from 'nodemailer'
import { AppError } from '../../http/errors.js'
import { systemClock, type Clock } from '../../lib/clock.js'
import type { SettingsService } from '../settings/service.js'

export interface SmtpTimeouts {
  /** Connecting, then waiting for the greeting: an unreachable server fails a request in seconds. */
  connectMs: number
  /** Inactivity once connected (nodemailer's default is 10 minutes). */
  socketMs: number
}

export const SMTP_TIMEOUTS: SmtpTimeouts = { connectMs: 10_000, socketMs: 30_000 }

export interface MailMessage {
  to: string
  subject: string
  text: string
  html: string
}

/** Which mail a best-effort send is, and the request that caused it: a failure's log line names both. */
export interface MailContext {
  mail: 'verification' | 'password_reset' | 'password_changed' | 'welcome'
    | 'invitation'
  requestId?: string
}

/** Whether account mails go out, and if not, every reason why (each names the setting to fix). */
export type MailStatus =
  | { enabled: true; sender: string; server: string }
  | { enabled: false; reasons: string[] }

export interface SentMail {
  /** Recipients the SMTP server accepted. */
  accepted: string[]
  messageId: string
}

/** The part of a pino logger this service uses. */
export interface MailLogger {
  info(object: object, message: string): void
  warn(object: object, message: string): void
  error(object: object, message: string): void
}

interface Deps {
  settings: SettingsService
  log: MailLogger
  clock?: Clock
  timeouts?: SmtpTimeouts
}

interface SmtpSettings {
  host: string
  port: number
  username: string
  password: string
  secure: boolean
  requireTls: boolean
  fromName: string
  fromEmail: string
}

export const mailErrors = {
  notConfigured: () =>
    new AppError(400, 'SMTP_NOT_CONFIGURED', 'SMTP is not configured: set smtp.host and smtp.from_email first.'),
  passwordUnreadable: () =>
    new AppError(400, 'SMTP_NOT_CONFIGURED', 'SMTP is not configured: smtp.password cannot be decrypted with the current ENCRYPTION_SECRET; set it again.'),
  smtp: (reason: string) => new AppError(502, 'SMTP_ERROR', `The mail could not be sent: ${reason}`),
}

/**
 * Mail over the SMTP settings, read at send time so a change applies to the next mail.
 * The transport is kept while those settings stay the same. It is not pooled: each mail opens its
 * own connection, so nothing stays open between mails and an idle service holds no sockets.
 */
export class MailService {
  private readonly settings: SettingsService
  private readonly log: MailLogger
  private readonly clock: Clock
  private readonly timeouts: SmtpTimeouts
  private cached: { key: string; transporter: Transporter<SMTPSentMessageInfo> } | null = null

  constructor({ settings, log, clock = systemClock, timeouts = SMTP_TIMEOUTS }: Deps) {
    this.settings = settings
    this.log = log
    this.clock = clock
    this.timeouts = timeouts
  }

  /**
   * Account mails go out only when sending is on and SMTP is configured; a password sealed under
   * another ENCRYPTION_SECRET leaves SMTP unconfigured rather than failing each login to the server.
   */
  async enabled(): Promise<boolean> {
    return (await this.status()).enabled
  }

  /** `enabled()` with its reasons: the start-up log says why mail is off. */
  async status(): Promise<MailStatus> {
    const [sendMail, host, port, fromName, fromEmail, passwordReadable] = await Promise.all([
      this.settings.get('global.send_mail'),
      this.settings.get('smtp.host'),
      this.settings.get('smtp.port'),
      this.settings.get('smtp.from_name'),
      this.settings.get('smtp.from_email'),
      this.settings.readable('smtp.password'),
    ])
    const reasons: string[] = []
    if (!sendMail) reasons.push('global.send_mail is off (SMTP_URL switches it on at the first start)')
    if (host.trim() === '') reasons.push('smtp.host is not set (set SMTP_URL)')
    if (fromEmail.trim() === '') reasons.push('smtp.from_email is not set (set SMTP_FROM)')
    if (!passwordReadable) reasons.push('smtp.password cannot be decrypted with the current ENCRYPTION_SECRET (set it again)')
    if (reasons.length > 0) return { enabled: false, reasons }
    const address = fromEmail.trim()
    return { enabled: true, sender: fromName === '' ? address : `${fromName} <${address}>`, server: `${host.trim()}:${port}` }
  }

  /**
   * Sends now, whatever `global.send_mail` says (the admin test mail must work before sending is
   * switched on). 400 SMTP_NOT_CONFIGURED without a host or sender, or with an undecryptable password; 502 SMTP_ERROR carrying the
   * server's own reply, or the connection failure, when the mail does not go out.
   */
  async send(message: MailMessage): Promise<SentMail> {
    const smtp = await this.smtpSettings()
    if (smtp.host === '' || smtp.fromEmail === '') throw mailErrors.notConfigured()
    if (!(await this.settings.readable('smtp.password'))) throw mailErrors.passwordUnreadable()
    const transporter = await this.transporter(smtp)
    let info: SMTPSentMessageInfo
    try {
      info = await transporter.sendMail({
        from: { name: smtp.fromName, address: smtp.fromEmail },
        to: message.to,
        subject: message.subject,
        text: message.text,
        html: message.html,
        date: new Date(this.clock.now()),
      })
    } catch (error) {
      // Never rethrown as is: nodemailer's ECONNREFUSED/ETIMEDOUT codes would read as a database outage.
      throw mailErrors.smtp(smtpReason(error))
    }
    return { accepted: info.accepted.map(String), messageId: info.messageId }
  }

  /**
   * For the account flows: a mail failure never fails the write that triggered it.
   * Sends only when `enabled()`; true when the mail went out. A failure is logged with which mail
   * it was, the request that caused it and the recipient's domain only — never the address, the
   * body or the link it carries.
   */
  async sendBestEffort(message: MailMessage, context: MailContext): Promise<boolean> {
    try {
      if (!(await this.enabled())) return false
      await this.send(message)
      return true
    } catch (error) {
      this.log.warn(
        {
          mail: context.mail,
          // Fastify's name for the request id: the request's own line is found by the same value.
          ...(context.requestId === undefined ? {} : { reqId: context.requestId }),
          recipient_domain: message.to.slice(message.to.lastIndexOf('@') + 1),
          code: error instanceof AppError ? error.code : 'UNEXPECTED',
          reason: withoutAddresses(error instanceof Error ? error.message : String(error)),
        },
        `${context.mail.replace('_', ' ')} mail not sent`,
      )
      return false
    }
  }

  close(): void {
    this.cached?.transporter.close()
    this.cached = null
  }

  private async smtpSettings(): Promise<SmtpSettings> {
    const get = this.settings.get.bind(this.settings)
    const [host, port, username, password, secure, requireTls, fromName, fromEmail] = await Promise.all([
      get('smtp.host'), get('smtp.port'), get('smtp.username'), get('smtp.password'),
      get('smtp.secure'), get('smtp.require_tls'), get('smtp.from_name'), get('smtp.from_email'),
    ])
    return { host: host.trim(), port, username, password, secure, requireTls, fromName, fromEmail: fromEmail.trim() }
  }

  /** nodemailer loads with the first mail, not at every start (it is a sizeable module). */
  private async transporter(smtp: SmtpSettings): Promise<Transporter<SMTPSentMessageInfo>> {
    const { host, port, username, password, secure, requireTls } = smtp
    const key = JSON.stringify([host, port, username, password, secure, requireTls])
    if (this.cached?.key === key) return this.cached.transporter
    const { default: nodemailer } = await import('nodemailer')
    // Again: another mail may have made it while the module loaded.
    if (this.cached?.key === key) return this.cached.transporter
    this.cached?.transporter.close()
    const transporter = nodemailer.createTransport({
      host,
      port,
      secure,
      requireTLS: requireTls,
      ...(username === '' ? {} : { auth: { user: username, pass: password } }),
      connectionTimeout: this.timeouts.connectMs,
      greetingTimeout: this.timeouts.connectMs,
      socketTimeout: this.timeouts.socketMs,
    })
    this.cached = { key, transporter }
    return transporter
  }
}

/**
 * nodemailer's message names the stage and quotes the server's reply ("Invalid login: 535 …",
 * "Can't send mail - all recipients were rejected: 550 …"); without a reply it names the
 * connection or TLS failure.
 */
function smtpReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const message = error.message.trim()
  const response = (error as NodemailerError).response?.trim()
  return response && !message.includes(response) ? `${message} (${response})` : message
}

/** A server's reply may quote the recipient; logs keep only its domain. */
function withoutAddresses(text: string): string {
  return text.replace(/[^\s<>"'@]+@(?=[^\s<>"'@]+)/g, '…@')
}
