import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { DatabaseStartError } from './db/drivers/start-failure.js'
import { logStartup } from './startup-banner.js'

/** Reads the configuration, builds the app, listens, logs a start-up summary, and shuts down gracefully. Nothing else. */
let config
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(error.message)
  process.exit(1)
}

let app
try {
  app = await buildApp(config)
} catch (error) {
  // The database could not be reached in time: the reason is logged already, in one line.
  if (!(error instanceof DatabaseStartError)) throw error
  process.exit(1)
}

// SIGTERM/SIGINT: with SHUTDOWN_DRAIN_SECONDS, readiness turns 503 while requests are still
// served, so that a load balancer drains this instance; then stop accepting, let in-flight
// requests finish (up to 10 s), close the database.
const drainMs = config.shutdownDrainMs
closeWithGrace({ delay: 10_000 + drainMs }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'shutting down after an uncaught error')
  else app.log.info({ signal, drain_ms: drainMs }, 'shutting down')
  if (!err && drainMs > 0) {
    app.drain()
    await new Promise((resolve) => setTimeout(resolve, drainMs))
  }
  await app.close()
})

await app.listen({ port: config.port, host: config.host })
await logStartup(app, config).catch((error: unknown) => app.log.warn({ err: error }, 'the start-up summary could not be completed'))
