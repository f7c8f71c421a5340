import { Server } from 'node:net'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'

/**
 * How long, once closing began, a keep-alive connection may stay idle before it is closed. A
 * client that is between two requests of a sequence sends the next one within milliseconds and
 * then hears the connection is ending from its answer; only connections idle for this long are
 * closed under their client.
 */
const IDLE_GRACE_MS = 1_000
const POLL_MS = 25
const SWEEP_MS = 50

/**
 * On close, requests already running finish, and no request loses its connection under it.
 *
 * HTTP/1.1 lets a server close an idle persistent connection at any time, but a request the
 * client is writing at that very moment is then lost with a reset, and the client cannot tell
 * whether it ran (RFC 9112 §9.3.1). Node's http.Server#close() closes every idle keep-alive
 * socket at once, which hits exactly the clients that are busiest (one answer received, the
 * next request on its way). So, while closing:
 * - the listener stops accepting at once (net.Server#close, which leaves open connections be);
 * - every answer says `Connection: close`: the in-flight ones through the onSend hook below, and
 *   requests that arrive on an open connection get a 503 `SHUTTING_DOWN` envelope (the app's
 *   onRequest hook asks `isClosing()`); each connection then ends after its answer, which its
 *   client reads;
 * - connections still idle after IDLE_GRACE_MS are closed (by http.Server#close, which Fastify
 *   calls once the preClose hooks are done), and idle sockets are swept again and again, so that a
 *   connection whose last request ends later does not hold the process until its keep-alive
 *   timeout.
 */
export function installGracefulClose(app: FastifyInstance): () => boolean {
  let closing = false
  let sweeper: NodeJS.Timeout | undefined

  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })

  app.addHook('preClose', async () => {
    closing = true
    const server = app.server
    // An app that never listened (inject) has no connections to look after.
    if (!server.listening) return
    Server.prototype.close.call(server)
    const connections = promisify(server.getConnections.bind(server))
    const deadline = Date.now() + IDLE_GRACE_MS
    while (Date.now() < deadline && (await connections()) > 0) await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    sweeper = setInterval(() => server.closeIdleConnections(), SWEEP_MS).unref()
  })
  app.addHook('onClose', async () => {
    clearInterval(sweeper)
  })
  return () => closing
}
