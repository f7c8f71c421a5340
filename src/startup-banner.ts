import type { FastifyInstance } from 'fastify'
import type { Config } from './config.js'
import { AppError } from './http/errors.js'
import { packageVersion } from './paths.js'
import type { Services } from './services.js'

const DIALECT_NAMES = { sqlite: 'SQLite', postgresql: 'PostgreSQL' } as const

/**
 * What an operator needs once the service listens, in a few lines: version, database, the address
 * to open — PUBLIC_URL, which browsers, mails and OAuth clients use, rather than the listen address
 * Fastify logs (127.0.0.1 or 0.0.0.0) — the API documentation, whether mail goes out and, if not,
 * why, provider login, and setup mode. The first line carries every item as a field too.
 */
export async function logStartup(app: FastifyInstance, config: Config): Promise<void> {
  const services = servicesOrNull(app)
  const setupMode = services === null
  // Before setup there are no settings: the documentation is served then.
  const docsOn = services === null || (await services.settings.get('global.enable_swagger_docs'))
  const documentationUrl = docsOn ? `${config.publicUrl}/documentation` : null
  const mail = services === null ? null : await services.mail.status()
  const provider = services === null ? null : await services.providerLogin.status()
  const providerOn = provider !== null && provider.enabled && provider.configured
  const dialect = DIALECT_NAMES[config.database.dialect]

  app.log.info(
    {
      version: packageVersion,
      dialect: config.database.dialect,
      public_url: config.publicUrl,
      documentation_url: documentationUrl,
      setup_mode: setupMode,
      mail_enabled: mail?.enabled ?? false,
      provider_login: providerOn,
    },
    `service ${packageVersion} on ${dialect} ready at ${config.publicUrl}`,
  )
  app.log.info(documentationUrl === null ? 'API documentation is off (global.enable_swagger_docs)' : `API documentation: ${documentationUrl}`)

  if (services === null) {
    app.log.warn('setup mode: every route but health, /api/db/* and the documentation answers 503 DATABASE_NOT_CONFIGURED until POST /api/db/setup')
    return
  }
  if (mail!.enabled) {
    app.log.info({ sender: mail!.sender, server: mail!.server }, `mail is enabled: from ${mail!.sender} via ${mail!.server}`)
  } else {
    // Mail asked for through the environment but still off is a mistake to point at; otherwise a choice.
    const asked = config.smtpUrl !== null || config.smtpFrom !== null
    app.log[asked ? 'warn' : 'info'](`mail is disabled: ${mail!.reasons.join('; ')}`)
  }
  if (providerOn) app.log.info(`provider login is on (${config.providerOauthUrl})`)
  else {
    const reasons = [
      ...(provider!.enabled ? [] : ['provider.oauth.enabled is off']),
      ...(provider!.configured ? [] : ['no client id and secret (set PROVIDER_OAUTH_CLIENT_ID and PROVIDER_OAUTH_CLIENT_SECRET)']),
    ]
    app.log.info(`provider login is off: ${reasons.join('; ')}`)
  }
}

/** The services, or null in setup mode (no database yet). */
function servicesOrNull(app: FastifyInstance): Services | null {
  try {
    return app.services
  } catch (error) {
    if (error instanceof AppError && error.code === 'DATABASE_NOT_CONFIGURED') return null
    throw error
  }
}
