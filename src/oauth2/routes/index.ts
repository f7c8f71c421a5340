import type { FastifyPluginAsync } from 'fastify'
import { browserRoutes } from './browser.js'
import { discoveryRoutes } from './discovery.js'
import { protocolRoutes } from './protocol.js'

/** The authorization server's routes. Form bodies are accepted only inside the browser and protocol contexts. */
export const oauthRoutes: FastifyPluginAsync = async (app) => {
  await app.register(browserRoutes)
  await app.register(protocolRoutes)
  await app.register(discoveryRoutes)
}
