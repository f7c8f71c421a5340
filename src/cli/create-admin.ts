import { createInterface } from 'node:readline/promises'
import { Writable } from 'node:stream'
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config.js'
import { openDatabase } from '../db/drivers/client.js'
import { AppError } from '../http/errors.js'
import { bodyValidator, toFieldProblems } from '../http/validation.js'
import { systemClock } from '../lib/clock.js'
import { RegisterBody } from '../modules/auth/schemas.js'
import type { Registration } from '../modules/auth/service.js'
import { createServices } from '../services.js'

/**
 * `npm run admin:create -- --username <name> --email <address>`: creates a global admin with a
 * verified email in the database named by DATABASE_URL, from the server's shell — so that an
 * instance reachable from the internet has its admin before anyone can register (and become the
 * first user, hence the admin). The password is never an argument, where it would stay in the
 * shell history and the process list: it is asked twice without echo on a terminal, or read from
 * the first line of standard input otherwise. The same rules as a registration apply (username,
 * email and password checks, unique email and username); a refusal exits with 1, a usage error 2.
 */
const USAGE = 'usage: npm run admin:create -- --username <name> --email <address> [--first-name <name>] [--last-name <name>]\n' +
  '  the password is asked on the terminal, or read from the first line of standard input:\n' +
  '  printf \'%s\\n\' "$ADMIN_PASSWORD" | npm run admin:create -- --username admin --email admin@example.com'

function usage(problem: string): never {
  console.error(`${problem}\n${USAGE}`)
  process.exit(2)
}

if (process.argv.slice(2).some((arg) => arg === '--password' || arg.startsWith('--password='))) {
  usage('--password is not accepted: a password given as an argument stays in the shell history and the process list.')
}
let values: Record<string, string | boolean | undefined>
try {
  ;({ values } = parseArgs({
    options: {
      'username': { type: 'string' },
      'email': { type: 'string' },
      'first-name': { type: 'string' },
      'last-name': { type: 'string' },
      'help': { type: 'boolean', short: 'h' },
    },
    strict: true,
  }))
} catch (error) {
  usage(error instanceof Error ? error.message : String(error))
}
if (values.help === true) {
  console.info(USAGE)
  process.exit(0)
}
if (typeof values.username !== 'string' || typeof values.email !== 'string') usage('--username and --email are required.')

/** A refusal worth one clear line, not a stack. */
class Refusal extends Error {}

/** Start-up warnings of the services (a missing PostgreSQL extension, unreadable secrets) reach the operator. */
const consoleLog = {
  info: () => {},
  warn: (_object: object, message: string) => console.warn(message),
  error: (_object: object, message: string) => console.error(message),
}

/** Where each field of the registration comes from, for the messages. */
const SOURCES: Readonly<Record<string, string>> = {
  username: '--username', email: '--email', first_name: '--first-name', last_name: '--last-name', password: 'the password',
}

try {
  // The configuration first: nobody types a password into a command that cannot run.
  const config = loadConfig()
  for (const warning of config.warnings) console.warn(warning)
  const password = process.stdin.isTTY ? await askPassword() : await firstLineOfStdin()
  const input: Registration = {
    username: values.username,
    email: values.email,
    password,
    ...(typeof values['first-name'] === 'string' ? { first_name: values['first-name'] } : {}),
    ...(typeof values['last-name'] === 'string' ? { last_name: values['last-name'] } : {}),
  }
  // The registration route's own schema: the same limits for the same fields.
  const validate = bodyValidator(RegisterBody)
  if (!validate(input)) {
    const problems = toFieldProblems(validate.errors ?? [], 'body').map(({ field, message }) => `  ${SOURCES[field] ?? field} ${message}`)
    throw new Refusal(`not created:\n${problems.join('\n')}`)
  }

  const database = openDatabase(config.database, { poolSize: 1, onPoolError: (error) => console.error(error.message) })
  try {
    await database.migrate()
    const services = await createServices(database, { config, clock: systemClock, log: consoleLog })
    const user = await services.accounts.createAdmin(input)
    const where = config.database.dialect === 'sqlite' ? `SQLite ${config.database.path}` : 'PostgreSQL'
    console.info(`created the global admin ${user.username} <${user.email}> (id ${user.id}, email verified) in ${where}`)
  } finally {
    await database.close()
  }
} catch (error) {
  if (error instanceof Refusal || error instanceof ConfigError) console.error(error.message)
  else if (error instanceof AppError) console.error(`not created: ${error.message} (${error.code})`)
  else console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
}

/**
 * Asks twice on the terminal without echoing what is typed: readline keeps its line editing,
 * but everything it would print goes nowhere.
 */
async function askPassword(): Promise<string> {
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() })
  const terminal = createInterface({ input: process.stdin, output: silent, terminal: true })
  // Ctrl-C, or Ctrl-D on an empty line, ends the command without creating anyone.
  const cancelled = new Promise<never>((_resolve, reject) => {
    terminal.once('SIGINT', () => reject(new Refusal('\ncancelled')))
    terminal.once('close', () => reject(new Refusal('\ncancelled')))
  })
  cancelled.catch(() => {})
  const ask = async (prompt: string) => {
    process.stderr.write(prompt)
    const answer = await Promise.race([terminal.question(''), cancelled])
    process.stderr.write('\n')
    return answer
  }
  try {
    const password = await ask('Password: ')
    if (password !== (await ask('Repeat the password: '))) throw new Refusal('not created: the two passwords differ')
    return password
  } finally {
    terminal.close()
  }
}

/** The password piped in: its first line, without the line break. */
async function firstLineOfStdin(): Promise<string> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
  try {
    for await (const line of lines) return line
    return ''
  } finally {
    lines.close()
  }
}
