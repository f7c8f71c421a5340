import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseEnv } from 'node:util'
import { hostEntry, isHttpUrl, isLoopbackUrl, parseDatabaseUrl, parseMailSender, parseTrustProxy, type DatabaseTarget, type MailSender, type TrustProxy } from './config-values.js'

export type { DatabaseTarget, MailSender, TrustProxy }

/**
 * The environment, read once, validated (every problem reported together), typed and frozen.
 * This is the only module that reads `process.env`; everything else receives a `Config`.
 */

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

/** `json`: one JSON object a line (machines, production); `pretty`: human-readable (a terminal). */
export type LogFormat = 'json' | 'pretty'

export interface Config {
  port: number
  host: string
  publicUrl: string
  dataDir: string
  database: DatabaseTarget
  databaseAutoSetup: boolean
  databasePoolSize: number
  /**
   * On SIGTERM, how long readiness answers 503 while requests are still served, before the
   * service stops accepting: the load balancer's health check sees it unready and sends the
   * next requests elsewhere (0: stop at once, for a single instance).
   */
  shutdownDrainMs: number
  encryptionSecret: string
  nodeEnv: string
  isProduction: boolean
  /**
   * Whether cookies carry `Secure`: with an https `PUBLIC_URL`, and in production unless the operator
   * chose plain http on purpose (`ALLOW_INSECURE_HTTP`), since browsers drop `Secure` cookies sent over
   * http from any host but loopback.
   */
  secureCookies: boolean
  logLevel: LogLevel
  logFormat: LogFormat
  pluginsDir: string
  pluginsDisabled: readonly string[]
  providerOauthUrl: string
  providerApiUrl: string
  corsOrigins: readonly string[]
  trustProxy: TrustProxy
  /** A request (line, headers and body) must have arrived whole within this; the answer may take longer. */
  requestTimeoutMs: number
  /** The request line and headers must have arrived within this (at most requestTimeoutMs). */
  headersTimeoutMs: number
  /** A connection on which no byte moves either way for this long is closed. */
  connectionTimeoutMs: number
  redisUrl: string | null
  rateLimitEnabled: boolean
  providerOauthClientId: string | null
  providerOauthClientSecret: string | null
  /** OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET: all three, or null (they seed the oidc.* settings). */
  oidcSeed: { issuer: string; clientId: string; clientSecret: string } | null
  smtpUrl: string | null
  smtpFrom: MailSender | null
  /** How long the first connection to the database is retried at start before the process gives up. */
  databaseConnectTimeoutMs: number
  /** Days the hourly tool-call figures are kept (the raw calls are kept 7 days whatever this says). */
  usageRetentionDays: number
  /**
   * `host` or `host:port` entries (lower case, IPv6 in brackets) that outbound requests (client
   * metadata documents) may reach even when they resolve to a private or loopback address.
   */
  outboundAllowedHosts: readonly string[]
  /** The Prometheus scraper's bearer token for GET /api/metrics; null: only global admins' sessions may read it. */
  metricsToken: string | null
  /** Things worth telling the operator once the logger exists (e.g. a generated secret). */
  warnings: readonly string[]
}

export type Environment = Readonly<Record<string, string | undefined>>

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`)
    this.name = 'ConfigError'
  }
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty']
const SECRET_MIN_LENGTH = 32
const METRICS_TOKEN_MIN_LENGTH = 16
const SECRET_FILE = 'encryption-secret'

/** `process.env` over the variables of a `.env` file in the working directory, if there is one. */
export function readEnvironment(cwd = process.cwd()): Environment {
  const file = join(cwd, '.env')
  const fromFile = existsSync(file) ? parseEnv(readFileSync(file, 'utf8')) : {}
  return { ...fromFile, ...process.env }
}

/**
 * `terminal`: whether standard output is a terminal, which makes `pretty` the default log format
 * (a person reads it); piped or collected output stays JSON.
 */
export function loadConfig(env: Environment = readEnvironment(), { terminal = process.stdout.isTTY === true } = {}): Config {
  const problems: string[] = []
  const warnings: string[] = []
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim()
    return value === undefined || value === '' ? undefined : value
  }
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name)
    if (raw === undefined) return fallback
    const value = Number(raw)
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      problems.push(`${name} must be an integer between ${min} and ${max} (got "${raw}")`)
      return fallback
    }
    return value
  }
  const boolean = (name: string, fallback: boolean): boolean => {
    const raw = read(name)?.toLowerCase()
    if (raw === undefined) return fallback
    if (['true', '1', 'yes'].includes(raw)) return true
    if (['false', '0', 'no'].includes(raw)) return false
    problems.push(`${name} must be true or false (got "${raw}")`)
    return fallback
  }
  const httpUrl = (name: string, fallback: string): string => {
    const raw = read(name) ?? fallback
    if (!isHttpUrl(raw)) {
      problems.push(`${name} must be an http(s) URL (got "${raw}")`)
      return fallback
    }
    return raw.replace(/\/+$/, '')
  }
  const list = (name: string): string[] =>
    (read(name) ?? '').split(',').map((item) => item.trim()).filter(Boolean)

  const nodeEnv = read('NODE_ENV') ?? 'development'
  const isProduction = nodeEnv === 'production'
  const port = integer('PORT', 3000, 0, 65535)
  const publicUrl = httpUrl('PUBLIC_URL', `http://localhost:${port}`)
  const dataDir = resolve(read('DATA_DIR') ?? './data')

  const logLevel = (read('LOG_LEVEL') ?? 'info') as LogLevel
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)
  const logFormat = (read('LOG_FORMAT')?.toLowerCase() ?? (terminal ? 'pretty' : 'json')) as LogFormat
  if (!LOG_FORMATS.includes(logFormat)) problems.push(`LOG_FORMAT must be json or pretty (got "${read('LOG_FORMAT')}")`)

  const database = parseDatabaseUrl(read('DATABASE_URL') ?? `sqlite:${join(dataDir, 'service.db')}`)
  if (typeof database === 'string') problems.push(database)

  const corsOrigins = list('CORS_ORIGINS')
  for (const origin of corsOrigins) {
    if (!isHttpUrl(origin) || new URL(origin).origin !== origin) {
      problems.push(`CORS_ORIGINS entries must be origins like https://app.example.com (got "${origin}")`)
    }
  }

  const redisUrl = read('REDIS_URL') ?? null
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) problems.push('REDIS_URL must start with redis:// or rediss://')

  const smtpUrl = read('SMTP_URL') ?? null
  if (smtpUrl !== null && !/^smtps?:\/\/[^/]+/.test(smtpUrl)) problems.push('SMTP_URL must look like smtp://user:pass@host:port or smtps://…')
  const rawSmtpFrom = read('SMTP_FROM')
  const smtpFrom = rawSmtpFrom === undefined ? null : parseMailSender(rawSmtpFrom)
  if (rawSmtpFrom !== undefined && smtpFrom === null) {
    problems.push(`SMTP_FROM must be an address or Name <address>, like "Service <noreply@example.com>" (got "${rawSmtpFrom}")`)
  }

  const outboundAllowedHosts: string[] = []
  for (const entry of list('OUTBOUND_ALLOWED_HOSTS')) {
    const host = hostEntry(entry)
    if (host === null) problems.push(`OUTBOUND_ALLOWED_HOSTS entries must be host or host:port, like docs.internal or 10.0.0.5:8443 (got "${entry}")`)
    else outboundAllowedHosts.push(host)
  }

  const rawTrustProxy = read('TRUST_PROXY')
  const trustProxy = rawTrustProxy === undefined ? false : parseTrustProxy(rawTrustProxy)
  if (typeof trustProxy === 'string') problems.push(trustProxy)
  else if (trustProxy === true) {
    warnings.push(
      'TRUST_PROXY=true believes every X-Forwarded-For entry, so a client chooses its own address (its rate-limit key and ' +
        'the IP in the audit log): set the number of proxies in front of the service (TRUST_PROXY=1) or their addresses instead.',
    )
  }

  const requestTimeout = integer('REQUEST_TIMEOUT', 30, 1, 3600)
  const headersTimeout = integer('HEADERS_TIMEOUT', Math.min(10, requestTimeout), 1, 3600)
  if (headersTimeout > requestTimeout) problems.push(`HEADERS_TIMEOUT must not exceed REQUEST_TIMEOUT (${headersTimeout} > ${requestTimeout})`)

  const allowInsecureHttp = boolean('ALLOW_INSECURE_HTTP', false)
  const plainHttp = isHttpUrl(publicUrl) && new URL(publicUrl).protocol === 'http:'
  if (isProduction && plainHttp && !allowInsecureHttp && !isLoopbackUrl(publicUrl)) {
    problems.push(
      `PUBLIC_URL is plain http on a host other than this machine (${publicUrl}) while NODE_ENV=production: browsers would drop ` +
        'the session cookie, which production marks Secure, and every sign-in would silently fail. Either serve the service over ' +
        'TLS and set PUBLIC_URL to its https:// address (e.g. behind a reverse proxy that terminates TLS), or set ' +
        'ALLOW_INSECURE_HTTP=true to run over plain http on a trusted network (cookies are then not marked Secure).',
    )
  } else if (isProduction && plainHttp && allowInsecureHttp) {
    warnings.push(
      `ALLOW_INSECURE_HTTP=true: serving ${publicUrl} over plain http, so session cookies and tokens cross the network ` +
        'unencrypted and cookies are not marked Secure. Set PUBLIC_URL to an https:// address as soon as TLS is in place.',
    )
  }

  const pluginsDisabled = list('PLUGINS_DISABLED')
  const metricsToken = read('METRICS_TOKEN') ?? null
  // Presented as `Authorization: Bearer <token>` (RFC 6750 token characters); `service_` starts satellite credentials.
  if (metricsToken !== null && (metricsToken.length < METRICS_TOKEN_MIN_LENGTH || !/^[A-Za-z0-9\-._~+/]+=*$/.test(metricsToken) || metricsToken.startsWith('service_'))) {
    problems.push(`METRICS_TOKEN must be at least ${METRICS_TOKEN_MIN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (= at the end), not starting with service_`)
  }
  const providerOauthClientId = read('PROVIDER_OAUTH_CLIENT_ID') ?? null
  const providerOauthClientSecret = read('PROVIDER_OAUTH_CLIENT_SECRET') ?? null
  if ((providerOauthClientId === null) !== (providerOauthClientSecret === null)) {
    problems.push('PROVIDER_OAUTH_CLIENT_ID and PROVIDER_OAUTH_CLIENT_SECRET must be set together')
  }

  const oidcIssuer = read('OIDC_ISSUER') ?? null
  const oidcClientId = read('OIDC_CLIENT_ID') ?? null
  const oidcClientSecret = read('OIDC_CLIENT_SECRET') ?? null
  const oidcSet = [oidcIssuer, oidcClientId, oidcClientSecret].filter((value) => value !== null).length
  if (oidcSet !== 0 && oidcSet !== 3) problems.push('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together')
  if (oidcIssuer !== null && !isHttpUrl(oidcIssuer)) problems.push(`OIDC_ISSUER must be an http(s) URL, the issuer identifier (got "${oidcIssuer}")`)
  const oidcSeed = oidcIssuer !== null && oidcClientId !== null && oidcClientSecret !== null ? { issuer: oidcIssuer, clientId: oidcClientId, clientSecret: oidcClientSecret } : null

  const config = {
    port,
    host: read('HOST') ?? '127.0.0.1',
    publicUrl,
    dataDir,
    database: database as DatabaseTarget,
    databaseAutoSetup: boolean('DATABASE_AUTO_SETUP', true),
    databasePoolSize: integer('DATABASE_POOL_SIZE', 10, 1, 500),
    shutdownDrainMs: integer('SHUTDOWN_DRAIN_SECONDS', 0, 0, 300) * 1000,
    encryptionSecret: '',
    nodeEnv,
    isProduction,
    secureCookies: !plainHttp || (isProduction && !allowInsecureHttp),
    logLevel,
    logFormat,
    pluginsDir: resolve(read('PLUGINS_DIR') ?? './plugins'),
    pluginsDisabled,
    providerOauthUrl: httpUrl('PROVIDER_OAUTH_URL', 'https://github.com'),
    providerApiUrl: httpUrl('PROVIDER_API_URL', 'https://api.github.com'),
    corsOrigins,
    trustProxy: trustProxy as TrustProxy,
    requestTimeoutMs: requestTimeout * 1000,
    headersTimeoutMs: headersTimeout * 1000,
    connectionTimeoutMs: integer('CONNECTION_TIMEOUT', 60, 1, 3600) * 1000,
    redisUrl,
    rateLimitEnabled: boolean('RATE_LIMIT_ENABLED', true),
    providerOauthClientId,
    providerOauthClientSecret,
    oidcSeed,
    smtpUrl,
    smtpFrom,
    databaseConnectTimeoutMs: integer('DATABASE_CONNECT_TIMEOUT', 30, 0, 3600) * 1000,
    usageRetentionDays: integer('USAGE_RETENTION_DAYS', 90, 7, 3660),
    outboundAllowedHosts,
    metricsToken,
    warnings,
  }

  // The secret is settled last: generating one writes to DATA_DIR, which only makes sense
  // once everything else is known to be valid.
  const secret = read('ENCRYPTION_SECRET')
  if (secret !== undefined && secret.length < SECRET_MIN_LENGTH) {
    problems.push(`ENCRYPTION_SECRET must be at least ${SECRET_MIN_LENGTH} characters`)
  } else if (secret === undefined && isProduction) {
    problems.push('ENCRYPTION_SECRET is required when NODE_ENV=production')
  }
  if (problems.length > 0) throw new ConfigError(problems)

  config.encryptionSecret = secret ?? generatedSecret(dataDir, warnings)
  return deepFreeze(config)
}

function readStoredSecret(file: string): string | null {
  if (!existsSync(file)) return null
  const stored = readFileSync(file, 'utf8').trim()
  // Replacing a damaged secret would make every encrypted setting unreadable: stop instead.
  if (stored.length < SECRET_MIN_LENGTH) {
    throw new ConfigError([`${file} holds a secret shorter than ${SECRET_MIN_LENGTH} characters; restore it or set ENCRYPTION_SECRET`])
  }
  return stored
}

/** Dev and test only: one random secret per data directory, kept private to this user. */
function generatedSecret(dataDir: string, warnings: string[]): string {
  const file = join(dataDir, SECRET_FILE)
  const stored = readStoredSecret(file)
  if (stored !== null) return stored
  mkdirSync(dataDir, { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  writeFileSync(file, `${secret}\n`, { mode: 0o600 })
  chmodSync(file, 0o600)
  // The secret itself is never logged: the operator copies it from the file.
  warnings.push(
    `ENCRYPTION_SECRET is not set: generated one and stored it in ${file} (mode 0600). ` +
      `Copy it into your configuration now (ENCRYPTION_SECRET=<contents of ${file}> in .env or the environment): ` +
      'if the file is lost or another secret is used, encrypted settings become unreadable and every session, ' +
      'token and satellite key stops working. NODE_ENV=production requires ENCRYPTION_SECRET.',
  )
  return secret
}

function deepFreeze<T extends object>(value: T): Readonly<T> {
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === 'object' && !Object.isFrozen(inner)) deepFreeze(inner)
  }
  return Object.freeze(value)
}
