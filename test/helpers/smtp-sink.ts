import type { AddressInfo } from 'node:net'
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser'
import { SMTPServer, type SMTPServerAddress } from 'smtp-server'
import type { SettingChange } from '../../src/modules/settings/service.js'

/**
 * A real SMTP server on loopback that keeps what it receives.
 * Plain SMTP on a free port; AUTH is offered only when required, STARTTLS only when asked for.
 */

export interface SmtpSinkOptions {
  /** Require AUTH with exactly these credentials (offered without TLS, as a test sink may). */
  auth?: { user: string; pass: string }
  /** Refuse every recipient with this reply, e.g. `550 5.1.1 mailbox unavailable`. */
  reject?: string
  /** Offer STARTTLS with smtp-server's built-in self-signed certificate. */
  starttls?: boolean
}

export interface ReceivedMail {
  /** What the client said in MAIL FROM and RCPT TO. */
  envelope: { from: string; to: string[] }
  from: { name: string; address: string } | null
  to: string[]
  subject: string
  text: string
  /** The raw HTML part, '' when there is none. */
  html: string
  headers: ParsedMail['headers']
}

export interface SmtpSink {
  readonly port: number
  readonly messages: readonly ReceivedMail[]
  /** Resolves once `count` mails have arrived; polls, no fixed sleep. */
  waitFor(count: number, timeoutMs?: number): Promise<readonly ReceivedMail[]>
  clear(): void
  close(): Promise<void>
}

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: ReceivedMail[] = []
  const disabledCommands = [...(options.starttls ? [] : ['STARTTLS']), ...(options.auth ? [] : ['AUTH'])]
  const server = new SMTPServer({
    secure: false,
    disabledCommands,
    authOptional: options.auth === undefined,
    allowInsecureAuth: true,
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 1000,
    onAuth(auth, _session, callback) {
      const { user, pass } = options.auth ?? {}
      if (auth.username === user && auth.password === pass) return callback(null, { user })
      callback(smtpReply('535 5.7.8 Authentication credentials invalid'))
    },
    onRcptTo(_address, _session, callback) {
      callback(options.reject === undefined ? null : smtpReply(options.reject))
    },
    onData(stream, session, callback) {
      // The client hears 250 only once the mail is kept: an awaited send is already in `messages`.
      simpleParser(stream).then((parsed) => {
        messages.push(received(parsed, session.envelope.mailFrom, session.envelope.rcptTo))
        callback()
      }, callback)
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.server.address() as AddressInfo

  return {
    port,
    messages,
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`SMTP sink: expected ${count} mail(s) within ${timeoutMs} ms, got ${messages.length}`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      return messages
    },
    clear() {
      messages.length = 0
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export type SettingOverrides = Record<string, string | number | boolean>

/** Settings that point the app at `sink`, with every other SMTP setting at its default unless overridden. */
export function smtpSettings(sink: Pick<SmtpSink, 'port'>, overrides: SettingOverrides = {}): SettingChange[] {
  const values: SettingOverrides = {
    'global.send_mail': true,
    'smtp.host': '127.0.0.1',
    'smtp.port': sink.port,
    'smtp.from_email': 'noreply@service.test',
    'smtp.from_name': 'Service',
    'smtp.username': '',
    'smtp.password': '',
    'smtp.secure': false,
    'smtp.require_tls': false,
    ...overrides,
  }
  return Object.entries(values).map(([key, value]) => ({ key, value }))
}

/** `550 5.1.1 text` → an error smtp-server answers with exactly that reply. */
function smtpReply(reply: string): Error {
  const match = /^(\d{3})\s+(.*)$/.exec(reply)
  if (match === null) throw new Error(`not an SMTP reply: ${reply}`)
  return Object.assign(new Error(match[2]), { responseCode: Number(match[1]) })
}

function addresses(field: AddressObject | AddressObject[] | undefined): string[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field]
  return objects.flatMap((object) => object.value.map((entry) => entry.address ?? ''))
}

function received(parsed: ParsedMail, mailFrom: SMTPServerAddress | false, rcptTo: SMTPServerAddress[]): ReceivedMail {
  const sender = parsed.from?.value[0]
  return {
    envelope: { from: mailFrom === false ? '' : mailFrom.address, to: rcptTo.map((recipient) => recipient.address) },
    from: sender === undefined ? null : { name: sender.name, address: sender.address ?? '' },
    to: addresses(parsed.to),
    subject: parsed.subject ?? '',
    text: parsed.text ?? '',
    html: parsed.html === false ? '' : parsed.html,
    headers: parsed.headers,
  }
}
