import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, join, relative, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig, readEnvironment, type Environment } from '../src/config.js'
import { projectRoot } from '../src/paths.js'

/** The environment is read once, validated (all problems at once), typed and frozen. */

const SECRET = 'config-test-secret-0123456789-abcdefghij'
const dirs: string[] = []

/** A fresh, empty DATA_DIR per test. */
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'))
  dirs.push(dir)
  return dir
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** The ConfigError that `loadConfig(env)` throws, or a failure when it does not throw one. */
function problemsOf(env: Environment): readonly string[] {
  try {
    loadConfig(env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as ConfigError).problems
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`)
}

describe('loadConfig defaults', () => {
  it('fills every documented default from an environment holding only DATA_DIR and the secret', () => {
    const dir = dataDir()
    const config = loadConfig({ DATA_DIR: dir, ENCRYPTION_SECRET: SECRET })
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      publicUrl: 'http://localhost:3000',
      dataDir: dir,
      database: { dialect: 'sqlite', path: join(dir, 'service.db') },
      databaseAutoSetup: true,
      encryptionSecret: SECRET,
      nodeEnv: 'development',
      isProduction: false,
      secureCookies: false,
      logLevel: 'info',
      rateLimitEnabled: true,
      trustProxy: false,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      connectionTimeoutMs: 60_000,
      providerOauthUrl: 'https://github.com',
      providerApiUrl: 'https://api.github.com',
      corsOrigins: [],
      pluginsDisabled: [],
      redisUrl: null,
      smtpUrl: null,
      smtpFrom: null,
      databaseConnectTimeoutMs: 30_000,
      providerOauthClientId: null,
      providerOauthClientSecret: null,
      outboundAllowedHosts: [],
      warnings: [],
    })
    expect(config.pluginsDir).toBe(resolve('plugins'))
  })

  it('derives the default PUBLIC_URL from PORT', () => {
    const config = loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, PORT: '8080' })
    expect(config.port).toBe(8080)
    expect(config.publicUrl).toBe('http://localhost:8080')
  })

  it('treats empty and blank variables as unset', () => {
    const config = loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, PORT: '', HOST: '   ', LOG_LEVEL: '' })
    expect(config).toMatchObject({ port: 3000, host: '127.0.0.1', logLevel: 'info' })
  })

  it('reads comma lists and booleans', () => {
    const config = loadConfig({
      DATA_DIR: dataDir(),
      ENCRYPTION_SECRET: SECRET,
      CORS_ORIGINS: 'https://app.example.com, http://localhost:5173 ,',
      PLUGINS_DISABLED: 'alpha,,beta',
      TRUST_PROXY: 'true',
      RATE_LIMIT_ENABLED: 'false',
      DATABASE_AUTO_SETUP: 'no',
    })
    expect(config.corsOrigins).toEqual(['https://app.example.com', 'http://localhost:5173'])
    expect(config.pluginsDisabled).toEqual(['alpha', 'beta'])
    expect(config).toMatchObject({ trustProxy: true, rateLimitEnabled: false, databaseAutoSetup: false })
  })
})

describe('loadConfig validation', () => {
  it('reports every bad variable together, one problem each', () => {
    const problems = problemsOf({
      DATA_DIR: dataDir(),
      ENCRYPTION_SECRET: SECRET,
      PORT: 'abc',
      LOG_LEVEL: 'loud',
      DATABASE_URL: 'mysql://x',
      TRUST_PROXY: 'maybe',
      CORS_ORIGINS: 'not-a-url',
    })
    expect(problems).toHaveLength(5)
    for (const name of ['PORT', 'LOG_LEVEL', 'DATABASE_URL', 'TRUST_PROXY', 'CORS_ORIGINS']) {
      expect(problems.filter((problem) => problem.includes(name)), name).toHaveLength(1)
    }
  })

  it('lists the problems in the error message as well', () => {
    expect(() => loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, PORT: '70000', REDIS_URL: 'http://cache' }))
      .toThrow(/PORT[\s\S]*REDIS_URL/)
  })

  it.each([
    ['PORT', '-1'],
    ['PORT', '65536'],
    ['PORT', '80.5'],
    ['PUBLIC_URL', 'ftp://example.com'],
    ['PUBLIC_URL', 'not a url'],
    ['PROVIDER_OAUTH_URL', 'github.com'],
    ['PROVIDER_API_URL', 'file:///etc/passwd'],
    ['DATABASE_AUTO_SETUP', 'sometimes'],
    ['RATE_LIMIT_ENABLED', 'off'],
    ['CORS_ORIGINS', 'https://app.example.com/path'],
    ['REDIS_URL', 'http://cache:6379'],
    ['SMTP_URL', 'http://x'],
    ['SMTP_URL', 'smtp://'],
    ['DATABASE_URL', 'sqlite:'],
    ['DATABASE_URL', 'postgres://'],
    ['OUTBOUND_ALLOWED_HOSTS', 'https://docs.internal'],
    ['OUTBOUND_ALLOWED_HOSTS', 'docs.internal/path'],
    ['OUTBOUND_ALLOWED_HOSTS', 'docs.internal:0'],
    ['OUTBOUND_ALLOWED_HOSTS', 'docs.internal:65536'],
    ['OUTBOUND_ALLOWED_HOSTS', 'docs.internal:https'],
    ['OUTBOUND_ALLOWED_HOSTS', 'user@docs.internal'],
    ['OUTBOUND_ALLOWED_HOSTS', '::1'],
    ['OUTBOUND_ALLOWED_HOSTS', '[::1'],
    ['OUTBOUND_ALLOWED_HOSTS', '*.example.com'],
  ])('%s=%s is a problem naming the variable', (name, value) => {
    const problems = problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, [name]: value })
    expect(problems).toHaveLength(1)
    expect(problems[0]).toContain(name)
  })

  it('requires the provider client id and secret together', () => {
    for (const half of [{ PROVIDER_OAUTH_CLIENT_ID: 'id' }, { PROVIDER_OAUTH_CLIENT_SECRET: 'secret' }]) {
      const problems = problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, ...half })
      expect(problems).toEqual([expect.stringMatching(/PROVIDER_OAUTH_CLIENT_ID.*PROVIDER_OAUTH_CLIENT_SECRET/)])
    }
    const config = loadConfig({
      DATA_DIR: dataDir(),
      ENCRYPTION_SECRET: SECRET,
      PROVIDER_OAUTH_CLIENT_ID: 'id',
      PROVIDER_OAUTH_CLIENT_SECRET: 'secret',
    })
    expect(config).toMatchObject({ providerOauthClientId: 'id', providerOauthClientSecret: 'secret' })
  })

  it('OUTBOUND_ALLOWED_HOSTS: host or host:port entries, written as URLs write hosts; every bad entry listed', () => {
    const config = loadConfig({
      DATA_DIR: dataDir(),
      ENCRYPTION_SECRET: SECRET,
      OUTBOUND_ALLOWED_HOSTS: 'Docs.Internal, 10.0.0.5:8443 ,[::1]:9443,[FD00::1],localhost:443,',
    })
    // An explicit :443 stays: `localhost:443` allows that port only.
    expect(config.outboundAllowedHosts).toEqual(['docs.internal', '10.0.0.5:8443', '[::1]:9443', '[fd00::1]', 'localhost:443'])
    const problems = problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, OUTBOUND_ALLOWED_HOSTS: 'ok.example, bad/path, also bad' })
    expect(problems).toHaveLength(2)
    expect(problems[0]).toMatch(/OUTBOUND_ALLOWED_HOSTS.*"bad\/path"/)
    expect(problems[1]).toMatch(/OUTBOUND_ALLOWED_HOSTS.*"also bad"/)
  })

  it('accepts smtp:// and smtps:// URLs', () => {
    for (const url of ['smtp://user:pass@mail.example.com:587', 'smtps://mail.example.com']) {
      expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, SMTP_URL: url }).smtpUrl).toBe(url)
    }
  })

  it('drops trailing slashes from PUBLIC_URL and the provider URLs', () => {
    const config = loadConfig({
      DATA_DIR: dataDir(),
      ENCRYPTION_SECRET: SECRET,
      PUBLIC_URL: 'https://api.example.com/',
      PROVIDER_OAUTH_URL: 'https://github.example.com//',
      PROVIDER_API_URL: 'https://github.example.com/api/v3/',
    })
    expect(config.publicUrl).toBe('https://api.example.com')
    expect(config.providerOauthUrl).toBe('https://github.example.com')
    expect(config.providerApiUrl).toBe('https://github.example.com/api/v3')
  })
})

describe('DATABASE_URL', () => {
  const load = (url: string) => loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, DATABASE_URL: url }).database

  it('sqlite::memory: is an in-memory SQLite database', () => {
    expect(load('sqlite::memory:')).toEqual({ dialect: 'sqlite', path: ':memory:', url: 'sqlite::memory:' })
  })

  it('a relative sqlite path is resolved to an absolute one', () => {
    const database = load('sqlite:./x.db')
    expect(database).toEqual({ dialect: 'sqlite', path: resolve('x.db'), url: 'sqlite:./x.db' })
    expect(database.dialect === 'sqlite' && isAbsolute(database.path)).toBe(true)
  })

  it.each(['postgres://user:pw@db.example.com:5432/service', 'postgresql://db.example.com/service'])(
    '%s is PostgreSQL, passed on unchanged',
    (url) => {
      expect(load(url)).toEqual({ dialect: 'postgresql', url })
    },
  )
})

describe('the configuration is frozen', () => {
  const config = () => loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, CORS_ORIGINS: 'https://app.example.com' })

  it('refuses assignments to its fields', () => {
    const subject = config() as unknown as { port: number }
    expect(() => {
      subject.port = 1
    }).toThrow(TypeError)
    expect(subject.port).toBe(3000)
  })

  it('refuses changes to nested lists and objects', () => {
    const subject = config()
    expect(() => (subject.corsOrigins as string[]).push('https://evil.example.com')).toThrow(TypeError)
    expect(() => (subject.warnings as string[]).push('x')).toThrow(TypeError)
    expect(() => {
      ;(subject.database as { path: string }).path = '/tmp/other.db'
    }).toThrow(TypeError)
    expect(subject.corsOrigins).toEqual(['https://app.example.com'])
    expect(Object.isFrozen(subject.database)).toBe(true)
  })
})

describe('ENCRYPTION_SECRET', () => {
  const secretFile = (dir: string) => join(dir, 'encryption-secret')

  it('is required in production, and nothing is written to DATA_DIR', () => {
    const dir = dataDir()
    const problems = problemsOf({ DATA_DIR: dir, NODE_ENV: 'production' })
    expect(problems).toEqual([expect.stringContaining('ENCRYPTION_SECRET')])
    expect(readdirSync(dir)).toEqual([])
  })

  it.each(['development', 'production', 'test'])('a 10-character secret is refused (NODE_ENV=%s)', (nodeEnv) => {
    const dir = dataDir()
    const problems = problemsOf({ DATA_DIR: dir, NODE_ENV: nodeEnv, ENCRYPTION_SECRET: '0123456789' })
    expect(problems).toEqual([expect.stringContaining('ENCRYPTION_SECRET')])
    expect(readdirSync(dir)).toEqual([])
  })

  it('a secret of 32 characters is accepted and used as given', () => {
    const secret = 'a'.repeat(32)
    const dir = dataDir()
    const config = loadConfig({ DATA_DIR: dir, NODE_ENV: 'production', ENCRYPTION_SECRET: secret })
    expect(config.encryptionSecret).toBe(secret)
    expect(config.isProduction).toBe(true)
    expect(config.warnings).toEqual([])
    expect(readdirSync(dir)).toEqual([])
  })

  it('outside production, is generated once, stored with mode 0600, and announced in a warning', () => {
    const dir = dataDir()
    const first = loadConfig({ DATA_DIR: dir })
    expect(first.encryptionSecret.length).toBeGreaterThanOrEqual(32)
    expect(readFileSync(secretFile(dir), 'utf8').trim()).toBe(first.encryptionSecret)
    expect(statSync(secretFile(dir)).mode & 0o777).toBe(0o600)
    expect(first.warnings).toEqual([expect.stringContaining('ENCRYPTION_SECRET')])
    expect(first.warnings[0]).toContain(secretFile(dir))
    // It tells the operator to keep the secret in the configuration, without printing it.
    expect(first.warnings[0]).toContain('Copy it into your configuration')
    expect(first.warnings[0]).not.toContain(first.encryptionSecret)

    // The next start finds the stored secret: same value, nothing new to tell the operator.
    const second = loadConfig({ DATA_DIR: dir })
    expect(second.encryptionSecret).toBe(first.encryptionSecret)
    expect(second.warnings).toEqual([])
  })

  it('a damaged stored secret stops the start instead of being replaced', () => {
    const dir = dataDir()
    writeFileSync(secretFile(dir), 'short\n', { mode: 0o600 })
    expect(() => loadConfig({ DATA_DIR: dir })).toThrow(ConfigError)
    expect(readFileSync(secretFile(dir), 'utf8')).toBe('short\n')
  })

  it('each data directory gets its own random secret', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).encryptionSecret).not.toBe(loadConfig({ DATA_DIR: dataDir() }).encryptionSecret)
  })

  it('creates a DATA_DIR that does not exist yet', () => {
    const dir = join(dataDir(), 'nested', 'data')
    const config = loadConfig({ DATA_DIR: dir })
    expect(readFileSync(secretFile(dir), 'utf8').trim()).toBe(config.encryptionSecret)
  })

  it('is not generated while another variable is invalid', () => {
    const dir = dataDir()
    problemsOf({ DATA_DIR: dir, PORT: 'abc' })
    expect(readdirSync(dir)).toEqual([])
  })
})

describe('readEnvironment', () => {
  const FROM_BOTH = 'SVC_CONFIG_TEST_FROM_BOTH'
  const FROM_FILE = 'SVC_CONFIG_TEST_FROM_FILE'
  afterEach(() => {
    delete process.env[FROM_BOTH]
    delete process.env[FROM_FILE]
  })

  it('reads a .env file in the given directory; process.env wins over it', () => {
    const dir = dataDir()
    writeFileSync(join(dir, '.env'), `# comment\n${FROM_BOTH}=from-file\n${FROM_FILE}="quoted value"\n`)
    process.env[FROM_BOTH] = 'from-process'
    const env = readEnvironment(dir)
    expect(env[FROM_BOTH]).toBe('from-process')
    expect(env[FROM_FILE]).toBe('quoted value')
  })

  it('without a .env file, is process.env alone', () => {
    process.env[FROM_BOTH] = 'from-process'
    const env = readEnvironment(dataDir())
    expect(env[FROM_BOTH]).toBe('from-process')
    expect(env[FROM_FILE]).toBeUndefined()
  })
})

describe('SMTP_FROM', () => {
  const sender = (value: string) => loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, SMTP_FROM: value }).smtpFrom

  it('is null when unset', () => {
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET }).smtpFrom).toBeNull()
  })

  it.each([
    ['noreply@example.com', { name: null, address: 'noreply@example.com' }],
    ['  noreply@localhost  ', { name: null, address: 'noreply@localhost' }],
    ['Service <noreply@example.com>', { name: 'Service', address: 'noreply@example.com' }],
    ['MCP Platform Team<team@example.com>', { name: 'MCP Platform Team', address: 'team@example.com' }],
    ['"Service, Inc." <noreply@example.com>', { name: 'Service, Inc.', address: 'noreply@example.com' }],
    ['<noreply@example.com>', { name: null, address: 'noreply@example.com' }],
  ])('reads %j', (value, expected) => {
    expect(sender(value)).toEqual(expected)
  })

  it.each([
    'noreply',
    'Service noreply@example.com',
    'Service <noreply>',
    'Service <noreply@example.com',
    'Service <a b@example.com>',
    'A <b> <noreply@example.com>',
    'noreply@@example.com',
    `${'x'.repeat(250)}@example.com`,
  ])('%j is a problem naming SMTP_FROM and both accepted forms', (value) => {
    const problems = problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, SMTP_FROM: value })
    expect(problems).toEqual([expect.stringMatching(/^SMTP_FROM must be an address or Name <address>/)])
  })
})

describe('DATABASE_CONNECT_TIMEOUT', () => {
  it('is 30 seconds by default, and read in seconds', () => {
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET }).databaseConnectTimeoutMs).toBe(30_000)
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, DATABASE_CONNECT_TIMEOUT: '2' }).databaseConnectTimeoutMs).toBe(2_000)
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, DATABASE_CONNECT_TIMEOUT: '0' }).databaseConnectTimeoutMs).toBe(0)
  })

  it.each(['-1', '1.5', '2s', '3601'])('%s is a problem naming the variable', (value) => {
    const problems = problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, DATABASE_CONNECT_TIMEOUT: value })
    expect(problems).toEqual([`DATABASE_CONNECT_TIMEOUT must be an integer between 0 and 3600 (got "${value}")`])
  })
})

describe('USAGE_RETENTION_DAYS', () => {
  it('is 90 days by default', () => {
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET }).usageRetentionDays).toBe(90)
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, USAGE_RETENTION_DAYS: '30' }).usageRetentionDays).toBe(30)
  })

  it.each(['6', '-1', '1.5', '90d', '3661'])('%s is a problem naming the variable', (value) => {
    const problems = problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, USAGE_RETENTION_DAYS: value })
    expect(problems).toEqual([`USAGE_RETENTION_DAYS must be an integer between 7 and 3660 (got "${value}")`])
  })
})

describe('TRUST_PROXY', () => {
  const load = (value: string) => loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, TRUST_PROXY: value })

  it.each(['false', 'FALSE', 'no', '0'])('%s trusts no proxy, silently', (value) => {
    expect(load(value)).toMatchObject({ trustProxy: false, warnings: [] })
  })

  it.each([['1', 1], ['2', 2], ['100', 100]])('%s is a hop count', (value, hops) => {
    expect(load(value)).toMatchObject({ trustProxy: hops, warnings: [] })
  })

  it('a comma list of addresses, CIDRs and proxy-addr range names is kept as a list', () => {
    expect(load(' 10.0.0.0/8, 192.168.1.7 ,::1,fd00::/8,loopback,').trustProxy).toEqual(['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8', 'loopback'])
  })

  it.each(['true', 'yes'])('%s is still accepted, with a warning that clients then choose their own address', (value) => {
    const config = load(value)
    expect(config.trustProxy).toBe(true)
    expect(config.warnings).toHaveLength(1)
    expect(config.warnings[0]).toMatch(/TRUST_PROXY=true .*client chooses its own address/)
  })

  it.each(['maybe', '101', '-1', '1.5', '10.0.0.0/33', '::1/129', '300.1.1.1', '10.0.0.1/8/2', 'proxy.internal', '10.0.0.1,nope', 'LOOPBACK'])(
    '%s is a problem naming the variable and the accepted forms',
    (value) => {
      const problems = problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, TRUST_PROXY: value })
      expect(problems).toHaveLength(1)
      expect(problems[0]).toMatch(/^TRUST_PROXY must be false, a number of proxy hops from 1 to 100, or a comma list of proxy addresses/)
      expect(problems[0]!.endsWith(`(got "${value}")`)).toBe(true)
    },
  )
})

describe('REQUEST_TIMEOUT, HEADERS_TIMEOUT, CONNECTION_TIMEOUT', () => {
  const load = (env: Environment) => loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, ...env })

  it('are read in seconds', () => {
    expect(load({ REQUEST_TIMEOUT: '5', HEADERS_TIMEOUT: '2', CONNECTION_TIMEOUT: '90' }))
      .toMatchObject({ requestTimeoutMs: 5_000, headersTimeoutMs: 2_000, connectionTimeoutMs: 90_000 })
  })

  it('the headers bound defaults to 10 s, or to REQUEST_TIMEOUT when that is shorter', () => {
    expect(load({ REQUEST_TIMEOUT: '60' }).headersTimeoutMs).toBe(10_000)
    expect(load({ REQUEST_TIMEOUT: '3' }).headersTimeoutMs).toBe(3_000)
  })

  it('headers may not take longer than the whole request', () => {
    expect(problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, REQUEST_TIMEOUT: '5', HEADERS_TIMEOUT: '6' }))
      .toEqual(['HEADERS_TIMEOUT must not exceed REQUEST_TIMEOUT (6 > 5)'])
  })

  it.each([
    ['REQUEST_TIMEOUT', '0'], ['REQUEST_TIMEOUT', '3601'], ['REQUEST_TIMEOUT', '30s'],
    ['HEADERS_TIMEOUT', '0'], ['HEADERS_TIMEOUT', '1.5'],
    ['CONNECTION_TIMEOUT', '0'], ['CONNECTION_TIMEOUT', '-5'],
  ])('%s=%s is a problem naming the variable (no way to switch a bound off)', (name, value) => {
    expect(problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, [name]: value }))
      .toEqual([`${name} must be an integer between 1 and 3600 (got "${value}")`])
  })
})

describe('PUBLIC_URL over plain http in production', () => {
  const production = (env: Environment) => ({ DATA_DIR: dataDir(), NODE_ENV: 'production', ENCRYPTION_SECRET: SECRET, ...env })

  it('on a host other than loopback stops the start, naming both ways out', () => {
    const problems = problemsOf(production({ PUBLIC_URL: 'http://192.168.1.20:3000' }))
    expect(problems).toHaveLength(1)
    expect(problems[0]).toContain('http://192.168.1.20:3000')
    expect(problems[0]).toContain('https://')
    expect(problems[0]).toContain('ALLOW_INSECURE_HTTP=true')
  })

  it('ALLOW_INSECURE_HTTP=true lets it start without Secure cookies, with a warning', () => {
    const config = loadConfig(production({ PUBLIC_URL: 'http://service.lan:3000', ALLOW_INSECURE_HTTP: 'true' }))
    expect(config.secureCookies).toBe(false)
    expect(config.warnings).toEqual([expect.stringContaining('ALLOW_INSECURE_HTTP')])
  })

  it.each(['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000', 'http://app.localhost:3000'])('on loopback (%s) starts, cookies Secure', (publicUrl) => {
    expect(loadConfig(production({ PUBLIC_URL: publicUrl })).secureCookies).toBe(true)
  })

  it('https is Secure everywhere; plain http outside production is not', () => {
    expect(loadConfig(production({ PUBLIC_URL: 'https://service.example.com' })).secureCookies).toBe(true)
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, PUBLIC_URL: 'https://service.example.com' }).secureCookies).toBe(true)
    expect(loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, PUBLIC_URL: 'http://192.168.1.20:3000' }).secureCookies).toBe(false)
  })
})

describe('LOG_FORMAT', () => {
  const format = (env: Environment, terminal: boolean) =>
    loadConfig({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, ...env }, { terminal }).logFormat

  it('defaults to pretty on a terminal and to JSON otherwise', () => {
    expect(format({}, true)).toBe('pretty')
    expect(format({}, false)).toBe('json')
  })

  it('an explicit choice wins either way, in any case', () => {
    expect(format({ LOG_FORMAT: 'json' }, true)).toBe('json')
    expect(format({ LOG_FORMAT: 'Pretty' }, false)).toBe('pretty')
  })

  it('anything else is a problem naming the variable', () => {
    expect(problemsOf({ DATA_DIR: dataDir(), ENCRYPTION_SECRET: SECRET, LOG_FORMAT: 'text' })).toEqual(['LOG_FORMAT must be json or pretty (got "text")'])
  })
})

describe('the environment is read in one place (STYLE habit 2)', () => {
  it('no module under src/ but src/config.ts touches process.env', () => {
    const src = join(projectRoot, 'src')
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'))
    expect(files).toContain('config.ts')
    const readers = files
      .filter((file) => /process\.env|process\[['"`]env['"`]\]|import\s*\{[^}]*\benv\b[^}]*\}\s*from\s*['"](node:)?process['"]/.test(readFileSync(join(src, file), 'utf8')))
      .map((file) => relative(projectRoot, join(src, file)))
    expect(readers).toEqual(['src/config.ts'])
  })
})
