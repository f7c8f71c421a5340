import type { FastifyInstance } from 'fastify'

const SWEEP_MS = 50

/**
 * SPEC §8: on close, requests already running finish. Node's server.close() drops idle
 * keep-alive sockets only once, so a socket whose request finishes after close began would hold
 * the server open until its keep-alive timeout. While closing, idle sockets are swept again and
 * again, which costs nothing per request.
 */
export function installGracefulClose(app: FastifyInstance): void {
  let sweeper: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    sweeper = setInterval(() => app.server.closeIdleConnections(), SWEEP_MS).unref()
  })
  app.addHook('onClose', async () => {
    clearInterval(sweeper)
  })
}
