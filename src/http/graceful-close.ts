import type { FastifyInstance } from 'fastify'

/**
 * SPEC §8: on close, requests already running finish. Node's server.close() only drops idle
 * keep-alive sockets once, so a socket whose request finishes after close began would hold the
 * server open until its keep-alive timeout; answering those with `Connection: close` lets the
 * server end as soon as the last in-flight response is written.
 */
export function installGracefulClose(app: FastifyInstance): void {
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close')
  })
}
