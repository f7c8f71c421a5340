import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { projectRoot } from '../../src/paths.js'
import { TEST_SECRET } from '../helpers/app.js'
import { ADMIN_URL, adminQuery, createTestDatabase, DIALECTS, type TestDatabase } from '../helpers/database.js'
import { SERVER_ENTRY, serverBuilt, startServerProcess, type ServerProcess } from '../helpers/server-process.js'
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

/**
 * The built server as `npm start` runs it: the start-up banner (version, dialect, PUBLIC_URL, the
 * documentation, mail and why it is off, provider login, setup mode), JSON or pretty logs, and a
 * PostgreSQL that is missing or late at start: one clear line without the password, retries for
 * DATABASE_CONNECT_TIMEOUT seconds, then a non-zero exit.
 */

const VERSION = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version
/** Starting the built server takes seconds on a busy machine. */
const SPAWN_TIMEOUT_MS = 60_000

type Entry = Record<string, any>

const jsonLines = (output: string): Entry[] =>
  output.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as Entry)

/** Resolves once the process wrote what `done` looks for, or fails with its output. */
async function waitForOutput(server: { output(): string }, done: (output: string) => boolean, timeoutMs = 20_000): Promise<string> {
  const deadline = Date.now() + timeoutMs
  while (!done(server.output())) {
    if (Date.now() > deadline) throw new Error(`expected output did not appear within ${timeoutMs} ms:\n${server.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return server.output()
}

/** A started server whose banner is complete (its last line is about provider login, or setup mode). */
async function startAndSummarize(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess(env, { timeoutMs: SPAWN_TIMEOUT_MS })
  onTestFinished(async () => {
    await server.stop()
  })
  await waitForOutput(server, (output) => /provider login is|setup mode:/.test(output))
  return server
}

interface Spawned {
  output(): string
  exited: Promise<number | null>
  kill(): void
}

/** The built server in an empty directory, however it ends. */
function spawnServer(env: Record<string, string>): Spawned {
  const cwd = mkdtempSync(join(tmpdir(), 'svc-start-'))
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    cwd,
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', ENCRYPTION_SECRET: TEST_SECRET, LOG_LEVEL: 'info', DATA_DIR: join(cwd, 'data'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  const exited = once(child, 'exit').then(([code]) => {
    rmSync(cwd, { recursive: true, force: true })
    return code as number | null
  })
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  })
  return { output: () => output, exited, kill: () => child.kill('SIGTERM') }
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A DATABASE_URL on the test server naming a database that does not exist, with a password that must never be logged. */
function missingDatabaseUrl(): { url: URL; name: string; password: string } {
  const url = new URL(ADMIN_URL)
  const name = `svc_missing_${randomBytes(5).toString('hex')}`
  url.pathname = `/${name}`
  // The test server trusts local connections, so any password is accepted; a real one is kept.
  if (url.password === '') url.password = `never-logged-${randomBytes(6).toString('hex')}`
  return { url, name, password: decodeURIComponent(url.password) }
}

beforeAll(() => {
  if (!serverBuilt) throw new Error(`${SERVER_ENTRY} is missing: run \`npm run build\` first`)
})

describe.each(DIALECTS)('the start-up banner on %s', (dialect) => {
  let database: TestDatabase
  let sink: SmtpSink
  const databaseEnv = (): Record<string, string> => (dialect === 'postgresql' ? { DATABASE_URL: database.url } : {})

  beforeAll(async () => {
    sink = await startSmtpSink()
  })
  afterAll(async () => {
    await sink?.close()
  })

  /** A fresh database per start, so that the environment seeds apply to settings nobody has set. */
  async function freshDatabase(): Promise<void> {
    database = await createTestDatabase(dialect)
    onTestFinished(() => database.drop())
  }

  it('names version, dialect, PUBLIC_URL and its documentation URL, mail and provider login, in JSON lines', async () => {
    await freshDatabase()
    const server = await startAndSummarize({
      ...databaseEnv(),
      PUBLIC_URL: 'http://localhost:3999',
      SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
      SMTP_FROM: 'MCP Platform <noreply@platform.test>',
      PROVIDER_OAUTH_CLIENT_ID: 'client-id',
      PROVIDER_OAUTH_CLIENT_SECRET: 'client-secret-value',
    })
    // Piped output is JSON, one object a line.
    const lines = jsonLines(server.output())
    const banner = lines.find((line) => /^service .* ready at /.test(line.msg))
    expect(banner).toMatchObject({
      level: 30,
      msg: `service ${VERSION} on ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} ready at http://localhost:3999`,
      version: VERSION,
      dialect,
      public_url: 'http://localhost:3999',
      documentation_url: 'http://localhost:3999/documentation',
      setup_mode: false,
      mail_enabled: true,
      provider_login: true,
    })
    const messages = lines.map((line) => line.msg as string)
    // Fastify's own line names the listen address; the banner comes after it.
    expect(messages.findIndex((message) => message.startsWith('Server listening at'))).toBeLessThan(messages.indexOf(banner!.msg))
    expect(messages).toContain('API documentation: http://localhost:3999/documentation')
    expect(messages).toContain(`mail is enabled: from MCP Platform <noreply@platform.test> via 127.0.0.1:${sink.port}`)
    expect(messages).toContain('provider login is on (https://github.com)')
    expect(server.output()).not.toContain('client-secret-value')
  }, SPAWN_TIMEOUT_MS * 2)

  it('with SMTP_URL but no SMTP_FROM, warns that mail is off and why', async () => {
    await freshDatabase()
    const server = await startAndSummarize({ ...databaseEnv(), SMTP_URL: `smtp://127.0.0.1:${sink.port}` })
    const lines = jsonLines(server.output())
    expect(lines.find((line) => line.msg.startsWith('mail is'))).toMatchObject({
      level: 40,
      msg: 'mail is disabled: smtp.from_email is not set (set SMTP_FROM)',
    })
    expect(lines.find((line) => /^service .* ready at /.test(line.msg))).toMatchObject({ mail_enabled: false, provider_login: false })
    expect(lines.find((line) => line.msg.startsWith('provider login is'))!.msg).toMatch(/^provider login is off: provider\.oauth\.enabled is off; no client id and secret/)
  }, SPAWN_TIMEOUT_MS * 2)

  it('in setup mode, says so instead of reporting mail and provider login', async () => {
    await freshDatabase()
    const server = await startAndSummarize({ ...databaseEnv(), DATABASE_AUTO_SETUP: 'false' })
    const lines = jsonLines(server.output())
    expect(lines.find((line) => /^service .* ready at /.test(line.msg))).toMatchObject({ setup_mode: true, dialect, documentation_url: expect.stringMatching(/\/documentation$/) })
    expect(lines.find((line) => line.msg.startsWith('setup mode:'))).toMatchObject({ level: 40, msg: expect.stringContaining('POST /api/db/setup') })
    expect(lines.some((line) => line.msg.startsWith('mail is'))).toBe(false)
  }, SPAWN_TIMEOUT_MS * 2)
})

describe('LOG_FORMAT=pretty', () => {
  it('writes human lines with local times and level names, a request on one line', async () => {
    const server = await startAndSummarize({ LOG_FORMAT: 'pretty' })
    const response = await fetch(`${server.url}/api/nowhere`, { headers: { 'x-request-id': 'pretty-404' } })
    expect(response.status).toBe(404)
    const output = await waitForOutput(server, (text) => text.includes('pretty-404'))
    const lines = output.split('\n').filter((line) => line.trim() !== '')
    expect(lines.some((line) => line.startsWith('{'))).toBe(false)
    expect(lines).toContainEqual(expect.stringMatching(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: Server listening at http:\/\/127\.0\.0\.1:\d+$/))
    expect(lines).toContainEqual(expect.stringMatching(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: service .* ready at http:\/\/localhost:/))
    expect(lines).toContainEqual(expect.stringMatching(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: GET \/api\/nowhere 404 NOT_FOUND \d+\.\d ms \(pretty-404\)$/))
  }, SPAWN_TIMEOUT_MS * 2)
})

describe('PostgreSQL unavailable at start', () => {
  it('a missing database: one clear line with host, port, database, user and the createdb hint, no password, exit 1', async () => {
    const { url, name, password } = missingDatabaseUrl()
    const server = spawnServer({ DATABASE_URL: url.toString(), DATABASE_CONNECT_TIMEOUT: '2' })
    expect(await server.exited).toBe(1)
    const output = server.output()
    expect(output).not.toContain(password)
    expect(output).not.toMatch(/\n\s+at /) // no stack trace
    const lines = jsonLines(output)
    const errors = lines.filter((line) => line.level >= 50)
    expect(errors).toHaveLength(1)
    const host = url.hostname
    const port = url.port === '' ? 5432 : Number(url.port)
    const user = decodeURIComponent(url.username)
    expect(errors[0]).toMatchObject({ host, port, database: name, user, code: '3D000' })
    expect(errors[0]!.msg).toBe(
      `PostgreSQL database "${name}" does not exist on ${host}:${port} (user ${user}); create it with: ` +
        `createdb -h ${host} -p ${port} -U ${user} ${name}; gave up after 2 s (DATABASE_CONNECT_TIMEOUT)`,
    )
    // It was tried again meanwhile, the reason said once as a warning.
    expect(lines.filter((line) => line.level === 40 && line.msg.includes('does not exist'))).toHaveLength(1)
    expect(lines.some((line) => String(line.msg).startsWith('Server listening'))).toBe(false)
  }, SPAWN_TIMEOUT_MS)

  it('a refused port: one clear line naming the address, exit 1', async () => {
    const port = await closedPort()
    const password = `never-logged-${randomBytes(6).toString('hex')}`
    const server = spawnServer({ DATABASE_URL: `postgres://svc:${password}@127.0.0.1:${port}/svc`, DATABASE_CONNECT_TIMEOUT: '1' })
    expect(await server.exited).toBe(1)
    const output = server.output()
    expect(output).not.toContain(password)
    expect(output).not.toMatch(/\n\s+at /)
    const errors = jsonLines(output).filter((line) => line.level >= 50)
    expect(errors).toEqual([
      expect.objectContaining({
        host: '127.0.0.1', port, database: 'svc', user: 'svc', code: 'ECONNREFUSED',
        msg: `nothing accepts connections on 127.0.0.1:${port} (database svc, user svc); start PostgreSQL there, or correct the host and port in DATABASE_URL; gave up after 1 s (DATABASE_CONNECT_TIMEOUT)`,
      }),
    ])
  }, SPAWN_TIMEOUT_MS)

  it('DATABASE_CONNECT_TIMEOUT=0 gives up after the first attempt', async () => {
    const port = await closedPort()
    const server = spawnServer({ DATABASE_URL: `postgres://svc@127.0.0.1:${port}/svc`, DATABASE_CONNECT_TIMEOUT: '0' })
    expect(await server.exited).toBe(1)
    const lines = jsonLines(server.output())
    expect(lines.filter((line) => line.level === 40)).toEqual([])
    expect(lines.filter((line) => line.level >= 50)).toEqual([expect.objectContaining({ code: 'ECONNREFUSED', msg: expect.stringContaining('gave up after 0 s') })])
  }, SPAWN_TIMEOUT_MS)

  it('a database created while the service waits is picked up, and the service serves', async () => {
    const { url, name } = missingDatabaseUrl()
    onTestFinished(() => adminQuery(`drop database if exists ${name} with (force)`))
    const server = spawnServer({ DATABASE_URL: url.toString(), DATABASE_CONNECT_TIMEOUT: '40' })
    await waitForOutput(server, (output) => output.includes('does not exist'), SPAWN_TIMEOUT_MS)
    await adminQuery(`create database ${name}`)
    const output = await waitForOutput(server, (text) => /provider login is/.test(text), SPAWN_TIMEOUT_MS)
    const lines = jsonLines(output)
    expect(lines.some((line) => line.msg === 'connected to the database')).toBe(true)
    expect(lines.filter((line) => line.level >= 50)).toEqual([])
    const address = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)![1]!
    expect((await fetch(`${address}/api/health/ready`)).status).toBe(200)
    server.kill()
    expect(await server.exited).toBe(0)
  }, SPAWN_TIMEOUT_MS * 2)
})
