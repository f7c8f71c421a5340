/**
 * The reference satellite's entry point:
 *
 *   BACKEND_URL=http://localhost:3000 REGISTRATION_TOKEN=service_satellite_… node dist/main.js
 *
 * SIGTERM or SIGINT stops it cleanly (its servers get SIGTERM, then SIGKILL after 5 seconds);
 * a second signal exits at once.
 */
import { ConfigError, configFromEnv } from './config.js'
import { consoleLogger } from './logger.js'
import { FatalError, Satellite } from './satellite.js'

const log = consoleLogger()

async function main(): Promise<number> {
  let config
  try {
    config = configFromEnv()
  } catch (error) {
    if (error instanceof ConfigError) {
      log.error(error.message)
      return 2
    }
    throw error
  }
  const satellite = new Satellite(config, log)
  let signalled = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) process.exit(1)
    signalled = true
    log.info(`${signal}: stopping`)
    void satellite.stop()
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  try {
    await satellite.start()
  } catch (error) {
    if (signalled) return 0
    log.error(error instanceof FatalError ? error.message : `could not start: ${error instanceof Error ? error.stack : String(error)}`)
    return 1
  }
  const reason = await satellite.ended
  log.info('stopped')
  return reason === undefined ? 0 : 1
}

process.exitCode = await main()
