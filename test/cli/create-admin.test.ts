import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { projectRoot } from '../../src/paths.js'
import { login, register, sessionCookie } from '../helpers/accounts.js'
import { createTestContext, TEST_SECRET, type TestContext } from '../helpers/app.js'
import { DIALECTS } from '../helpers/database.js'

/**
 * `npm run admin:create` as an operator runs it: the built command as a real process on the
 * database a server uses, then that server's API to see what it made.
 */
const CLI = join(projectRoot, 'dist/src/cli/create-admin.js')
const built = existsSync(CLI)
/** util-linux's `script` gives the command a real terminal, to check that the password is not echoed. */
const scriptAvailable = ['/usr/bin/script', '/bin/script'].some(existsSync)
const PASSWORD = 'a long enough passphrase'
const SLOW = 60_000

interface Outcome { code: number | null; stdout: string; stderr: string }

describe.skipIf(!built).each(DIALECTS)('npm run admin:create on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let cwd: string
  let adminCookie: string

  /** The command with the server's configuration; `stdin` is what is piped in. */
  function run(args: string[], stdin = `${PASSWORD}\n`): Promise<Outcome> {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: environment(), stdio: ['pipe', 'pipe', 'pipe'] })
    child.stdin.end(stdin)
    return collect(child)
  }

  function environment(): NodeJS.ProcessEnv {
    return { PATH: process.env.PATH, DATABASE_URL: ctx.database.url, DATA_DIR: ctx.dataDir, ENCRYPTION_SECRET: TEST_SECRET }
  }

  const userCount = async () =>
    (await app.inject({ method: 'GET', url: '/api/admin/users', headers: { cookie: adminCookie } })).json().data.pagination.total as number

  beforeAll(async () => {
    ctx = await createTestContext(dialect, { file: true })
    // An empty working directory: no .env of the checkout leaks in.
    cwd = mkdtempSync(join(tmpdir(), 'svc-cli-'))
  })
  afterAll(async () => {
    await ctx?.close()
    if (cwd !== undefined) rmSync(cwd, { recursive: true, force: true })
  })

  it('creates a verified global admin with a default team on an empty database, who then signs in', async () => {
    const outcome = await run(['--username', 'operator', '--email', 'Operator@Example.com', '--first-name', 'Ops'])
    expect(outcome.stderr).toBe('')
    expect(outcome.code).toBe(0)
    expect(outcome.stdout).toContain('created the global admin operator <operator@example.com>')

    ;({ app } = await ctx.build({ env: { RATE_LIMIT_ENABLED: 'false' } }))
    const { response, cookie } = await login(app, 'operator@example.com', PASSWORD)
    expect(response.statusCode).toBe(200)
    adminCookie = cookie!
    expect(response.json().data.user).toMatchObject({
      username: 'operator', email: 'operator@example.com', first_name: 'Ops', role_id: 'global_admin', email_verified: true, auth_methods: ['email'],
    })
    const team = await app.inject({ method: 'GET', url: '/api/teams/me/default', headers: { cookie: adminCookie } })
    expect(team.statusCode).toBe(200)
    const events = (await app.inject({ method: 'GET', url: '/api/admin/audit-log?type=user.registered', headers: { cookie: adminCookie } })).json().data.events
    expect(events).toEqual([expect.objectContaining({ type: 'user.registered', actor_id: response.json().data.user.id, details: { role_id: 'global_admin', method: 'cli' } })])
  }, SLOW)

  it('leaves the next registration an ordinary user: the admin exists before anyone registers', async () => {
    const registered = await register(app, { username: 'visitor', email: 'visitor@example.com' })
    expect(registered.statusCode).toBe(201)
    expect(registered.json().data.user).toMatchObject({ role_id: 'global_user' })
    expect(sessionCookie(registered)).toBeDefined()
  })

  it('adds another admin later, also verified', async () => {
    const outcome = await run(['--username', 'second-admin', '--email', 'second@example.com'])
    expect(outcome.code).toBe(0)
    const { response } = await login(app, 'second-admin', PASSWORD)
    expect(response.json().data.user).toMatchObject({ role_id: 'global_admin', email_verified: true })
  }, SLOW)

  it.each([
    ['an email taken in another case', ['--username', 'someone-new', '--email', 'VISITOR@example.com'], 'EMAIL_TAKEN'],
    ['a username taken in another case', ['--username', 'OPERATOR', '--email', 'someone-new@example.com'], 'USERNAME_TAKEN'],
  ])('refuses %s with exit code 1 and writes nothing', async (_case, args, code) => {
    const before = await userCount()
    const outcome = await run(args)
    expect(outcome.code).toBe(1)
    expect(outcome.stderr).toContain(code)
    expect(outcome.stdout).toBe('')
    expect(await userCount()).toBe(before)
  }, SLOW)

  it('refuses a password shorter than registration allows, and an invalid email, naming each', async () => {
    const before = await userCount()
    const outcome = await run(['--username', 'weak', '--email', 'not-an-email'], 'short\n')
    expect(outcome.code).toBe(1)
    expect(outcome.stderr).toContain('the password must NOT have fewer than 8 characters')
    expect(outcome.stderr).toContain('--email must match format "email"')
    expect(await userCount()).toBe(before)
    const { response } = await login(app, 'weak', 'short')
    expect(response.statusCode).toBe(401)
  }, SLOW)

  it('refuses a password given as an argument, and missing arguments, with exit code 2', async () => {
    const before = await userCount()
    const asArgument = await run(['--username', 'leaky', '--email', 'leaky@example.com', `--password=${PASSWORD}`])
    expect(asArgument.code).toBe(2)
    expect(asArgument.stderr).toContain('--password is not accepted')
    const missing = await run(['--username', 'leaky'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('--username and --email are required')
    expect(await userCount()).toBe(before)
  }, SLOW)

  it.skipIf(!scriptAvailable)('asks twice on a terminal without echoing the password, and refuses two different answers', async () => {
    const typed = await onTerminal(['--username', 'typed', '--email', 'typed@example.com'], [PASSWORD, PASSWORD])
    expect(typed.code).toBe(0)
    expect(typed.stdout).toContain('Password: ')
    expect(typed.stdout).toContain('Repeat the password: ')
    expect(typed.stdout).not.toContain(PASSWORD)
    expect((await login(app, 'typed', PASSWORD)).response.statusCode).toBe(200)

    const before = await userCount()
    const differing = await onTerminal(['--username', 'mistyped', '--email', 'mistyped@example.com'], [PASSWORD, `${PASSWORD}!`])
    expect(differing.code).toBe(1)
    expect(differing.stdout).toContain('the two passwords differ')
    expect(await userCount()).toBe(before)
  }, SLOW)

  /** Runs the command on a pseudo-terminal and types each answer once its prompt shows. */
  function onTerminal(args: string[], answers: string[]): Promise<Outcome> {
    const command = [process.execPath, CLI, ...args].map((word) => `'${word}'`).join(' ')
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd, env: environment(), stdio: ['pipe', 'pipe', 'pipe'] })
    const prompts = ['Password: ', 'Repeat the password: ']
    let seen = ''
    child.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString()
      const prompt = prompts[0]
      if (prompt !== undefined && seen.endsWith(prompt)) {
        prompts.shift()
        child.stdin.write(`${answers.shift()}\r`)
      }
    })
    return collect(child)
  }
})

function collect(child: ReturnType<typeof spawn>): Promise<Outcome> {
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}
